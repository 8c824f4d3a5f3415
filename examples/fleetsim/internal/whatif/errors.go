package whatif

import "fmt"

// The exit codes of fleetsim --what-if (REFERENCE.md lists them).
const (
	// ExitUsage: a flag is malformed or missing (--fail, --kubeconfig).
	ExitUsage = 2
	// ExitUnknownName: --fail names a region, zone or cluster the control
	// plane does not have.
	ExitUnknownName = 3
	// ExitUnreachable: the kubeconfig cannot be loaded, or the control
	// plane cannot be reached or does not serve Karmada's APIs.
	ExitUnreachable = 4
	// ExitForbidden: the control plane refuses a read (401 or 403).
	ExitForbidden = 5
	// ExitBadObject: an object read cannot be used (a ClusterTaintPolicy
	// that does not convert).
	ExitBadObject = 6
)

// ExitError is an error with the exit code fleetsim ends with.
type ExitError struct {
	// Code is one of the Exit constants.
	Code int
	// Err says what went wrong, naming the value.
	Err error
}

// Error is the wrapped error's message.
func (e *ExitError) Error() string { return e.Err.Error() }

// Unwrap returns the wrapped error.
func (e *ExitError) Unwrap() error { return e.Err }

// ExitCode is the code the process exits with.
func (e *ExitError) ExitCode() int { return e.Code }

func usageErr(format string, args ...any) error {
	return &ExitError{Code: ExitUsage, Err: fmt.Errorf("fleetsim: "+format, args...)}
}
