package taintpolicy

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// InvalidPolicyError reports every problem of one policy. LoadPolicies,
// NewEvaluator and SetPolicies return one per invalid policy (joined with
// errors.Join); use errors.As to reach them.
type InvalidPolicyError struct {
	// Document is the 1-based number of the YAML document the policy came
	// from, 0 when it was not loaded from YAML.
	Document int
	// Line is the line on which that document starts, 0 when unknown.
	Line int
	// Index is the policy's position in the slice given to NewEvaluator or
	// SetPolicies, or in the list a document holds; -1 when it does not apply.
	Index int
	// Name is the policy's metadata.name.
	Name string
	// Errs are the problems, each with its field path.
	Errs field.ErrorList
}

// Error lists every problem with its field path.
func (e *InvalidPolicyError) Error() string {
	var b strings.Builder
	b.WriteString("taintpolicy: ")
	b.WriteString(e.where())
	fmt.Fprintf(&b, "policy %q is invalid: ", e.Name)
	for i, fe := range e.Errs {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(fe.Error())
	}
	return b.String()
}

func (e *InvalidPolicyError) where() string {
	var parts []string
	if e.Document > 0 {
		parts = append(parts, fmt.Sprintf("document %d (line %d)", e.Document, e.Line))
	}
	if e.Index >= 0 {
		if e.Document > 0 {
			parts = append(parts, fmt.Sprintf("items[%d]", e.Index))
		} else {
			parts = append(parts, fmt.Sprintf("policies[%d]", e.Index))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return strings.Join(parts, ": ") + ": "
}

// DecodeError reports a YAML document that does not decode into a
// ClusterTaintPolicy: malformed YAML, an unknown or duplicated field, a value
// of the wrong type, or the wrong apiVersion or kind.
type DecodeError struct {
	// Document is the 1-based number of the document in the stream,
	// counting only documents with content (not blank or comment-only ones).
	Document int
	// Line is the line on which the document's content starts.
	Line int
	// Err is the cause.
	Err error
}

// Error names the document, its first line and the problem.
func (e *DecodeError) Error() string {
	return fmt.Sprintf("taintpolicy: document %d (line %d): %v", e.Document, e.Line, e.Err)
}

// Unwrap returns the cause.
func (e *DecodeError) Unwrap() error { return e.Err }
