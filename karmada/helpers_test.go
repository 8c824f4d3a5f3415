package karmada_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// decode reads a Karmada object from YAML as the API server would store it:
// strictly, so a fixture with a field Karmada v1.18 does not define fails
// instead of testing less than it says.
func decode[T any](t *testing.T, doc string) *T {
	t.Helper()
	var obj T
	require.NoError(t, yaml.UnmarshalStrict([]byte(doc), &obj))
	return &obj
}
