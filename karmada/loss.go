package karmada

import (
	"errors"
	"strings"
)

// Loss is one field of a Karmada object that the library's type cannot carry.
type Loss struct {
	// Field is the path of the field in the Karmada object, as in
	// "placement.workloadAffinity".
	Field string
	// Why says what the library does without it.
	Why string
}

// LossError reports the fields a conversion could not carry. A conversion
// that returns a LossError also returns the conversion of everything else:
// a caller that accepts the loss may use that value (find the error with
// errors.As), one that does not must treat it as any other error.
type LossError struct {
	// Object names what was converted, as in `placement` or
	// `cluster taint policy "x"`.
	Object string
	// Losses are the fields left out, in the order of the object's fields.
	Losses []Loss
}

// Error names every field left out.
func (e *LossError) Error() string {
	var b strings.Builder
	b.WriteString("karmada: ")
	b.WriteString(e.Object)
	b.WriteString(": the library cannot carry ")
	for i, l := range e.Losses {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(l.Field)
		if l.Why != "" {
			b.WriteString(" (")
			b.WriteString(l.Why)
			b.WriteString(")")
		}
	}
	return b.String()
}

// losses collects Loss values; its err is nil when there are none.
type losses struct {
	object string
	ls     []Loss
}

func (l *losses) add(field, why string) { l.ls = append(l.ls, Loss{Field: field, Why: why}) }

func (l *losses) err() error {
	if len(l.ls) == 0 {
		return nil
	}
	return &LossError{Object: l.object, Losses: l.ls}
}

// isLoss reports whether err is a *LossError, after which the converted
// value is usable.
func isLoss(err error) bool {
	var le *LossError
	return errors.As(err, &le)
}
