package evictionqueue

// WaitUntil lets the external tests (package evictionqueue_test) poll for
// goroutine states with the same bounded helper as the internal ones.
var WaitUntil = waitUntil
