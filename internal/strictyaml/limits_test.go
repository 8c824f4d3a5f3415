package strictyaml

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// aliasBomb is a document of nested aliases: levels lists, each of width
// aliases to the one before, the first of width scalars. It is a few
// hundred bytes and expands to width^levels nodes.
func aliasBomb(levels, width int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "a0: &a0 [%s]\n", strings.TrimSuffix(strings.Repeat("x,", width), ","))
	for i := 1; i < levels; i++ {
		fmt.Fprintf(&b, "a%d: &a%d [%s]\n", i, i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*a%d,", i-1), width), ","))
	}
	return b.String()
}

// TestLimitsRefuseWhatWouldExhaustMemory: whatever its shape, a stream is
// refused before it is decoded if it is too large or expands to too many
// nodes, and every error is short.
func TestLimitsRefuseWhatWouldExhaustMemory(t *testing.T) {
	var v map[string]any
	decodeAll := func(stream string) []error {
		var errs []error
		for _, d := range Split([]byte(stream)) {
			errs = append(errs, Decode(d, &v))
		}
		return errs
	}
	t.Run("nested aliases", func(t *testing.T) {
		errs := decodeAll(aliasBomb(9, 10)) // 10^9 nodes in 300 bytes
		require.Len(t, errs, 1)
		require.Error(t, errs[0])
		assert.Contains(t, errs[0].Error(), "expands to more than 524288 nodes")
	})
	t.Run("an alias within its own anchor", func(t *testing.T) {
		errs := decodeAll("a: &a [x, *a]\n")
		require.Error(t, errs[0])
		assert.Contains(t, errs[0].Error(), "expands to more than")
	})
	t.Run("aliases within the limit decode", func(t *testing.T) {
		errs := decodeAll(aliasBomb(3, 10)) // 10^3
		assert.NoError(t, errs[0])
	})
	t.Run("the budget is the stream's, not each document's", func(t *testing.T) {
		// 101,106 nodes each, 100 aliases to a list of 1000: five fit.
		doc := "a: &a [" + strings.Repeat("x,", 999) + "x]\nb: [" + strings.Repeat("*a,", 99) + "*a]\n"
		errs := decodeAll(strings.Repeat(doc+"---\n", 7))
		require.Len(t, errs, 7)
		for i, err := range errs {
			if i < 5 {
				assert.NoError(t, err, "document %d", i+1)
			} else {
				assert.ErrorContains(t, err, "more than 524288 nodes", "document %d", i+1)
			}
		}
	})
	t.Run("too many bytes", func(t *testing.T) {
		big := "a: " + strings.Repeat("x", MaxBytes) + "\n"
		errs := decodeAll(big)
		require.Len(t, errs, 1)
		assert.ErrorContains(t, errs[0], "larger than 1048576 bytes")
		_, err := ReadAll(strings.NewReader(big))
		assert.ErrorContains(t, err, "larger than 1048576 bytes")
		data, err := ReadAll(iotest.HalfReader(strings.NewReader("a: 1\n")))
		assert.NoError(t, err)
		assert.Equal(t, "a: 1\n", string(data))
	})
	t.Run("errors are short", func(t *testing.T) {
		var fields strings.Builder
		for i := range 50000 {
			fmt.Fprintf(&fields, "unknown%d: 1\n", i)
		}
		var w struct {
			Name string `json:"name"`
		}
		err := Decode(Split([]byte(fields.String()))[0], &w)
		require.Error(t, err)
		assert.Less(t, len(err.Error()), 1100)
		assert.Contains(t, err.Error(), `unknown field "unknown`)
		assert.Contains(t, err.Error(), "bytes more)")
		var se *Error
		assert.True(t, errors.As(err, &se), "still an *Error")
	})
}

// BenchmarkRefuse is the time to refuse the largest and the most aliased
// streams: well under a second each.
func BenchmarkRefuse(b *testing.B) {
	var v map[string]any
	for name, stream := range map[string]string{
		"nested-aliases-300B": aliasBomb(9, 10),
		"dense-aliased-1MiB":  "a: &a [1, 1]\nb: [" + strings.Repeat("*a,", MaxBytes/3-10) + "*a]\n",
		"over-1MiB":           strings.Repeat("a", MaxBytes+1),
	} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := Decode(Split([]byte(stream))[0], &v); err == nil {
					b.Fatal("decoded")
				}
			}
		})
	}
}
