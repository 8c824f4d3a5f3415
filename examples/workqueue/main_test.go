package main

import (
	"testing"

	"go.uber.org/goleak"
)

// Informers, the workqueue and the workers must all be gone when Run returns.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
