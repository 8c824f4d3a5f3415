package failover

import "fmt"

// PurgeMode says how the copy of a workload on a cluster it is evicted from is
// removed. Its JSON is that of Karmada's policy/v1alpha1 PurgeMode.
type PurgeMode string

const (
	// PurgeModeDirectly removes the old copy at once, before a replacement
	// runs elsewhere.
	PurgeModeDirectly PurgeMode = "Directly"
	// PurgeModeGracefully keeps the old copy until a replacement is healthy or
	// a grace period has passed. It is the default.
	PurgeModeGracefully PurgeMode = "Gracefully"
	// PurgeModeNever never removes the old copy; an operator does.
	PurgeModeNever PurgeMode = "Never"
	// PurgeModeImmediately is the legacy name of PurgeModeDirectly.
	PurgeModeImmediately PurgeMode = "Immediately"
	// PurgeModeGraciously is the legacy name of PurgeModeGracefully.
	PurgeModeGraciously PurgeMode = "Graciously"
)

// Canonical maps the legacy names onto the current ones (Immediately to
// Directly, Graciously to Gracefully) and the empty mode onto the default,
// Gracefully. Any other value is returned unchanged.
func (m PurgeMode) Canonical() PurgeMode {
	switch m {
	case "", PurgeModeGraciously:
		return PurgeModeGracefully
	case PurgeModeImmediately:
		return PurgeModeDirectly
	}
	return m
}

// Validate returns an error naming the value when m is none of Directly,
// Gracefully, Never, Immediately, Graciously or empty (the default).
func (m PurgeMode) Validate() error {
	switch m.Canonical() {
	case PurgeModeDirectly, PurgeModeGracefully, PurgeModeNever:
		return nil
	}
	return fmt.Errorf("failover: unknown purge mode %q: want Directly, Gracefully or Never (legacy Immediately, Graciously)", string(m))
}

// ParsePurgeMode returns the canonical purge mode that s names, accepting the
// legacy names and the empty string (Gracefully).
func ParsePurgeMode(s string) (PurgeMode, error) {
	m := PurgeMode(s)
	if err := m.Validate(); err != nil {
		return "", err
	}
	return m.Canonical(), nil
}
