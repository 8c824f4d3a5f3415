package prescheduling

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"go.uber.org/goleak"
)

// One Checker and one fleet serve many goroutines at once (run with -race).
func TestCheckConcurrently(t *testing.T) {
	defer goleak.VerifyNone(t)
	fleet := benchFleet(300)
	req := benchRequest()
	c := mustChecker(WithCapacity(func(string) (int32, bool) { return 1, true }))
	want := c.Check(req, fleet)
	var wg sync.WaitGroup
	results := make([]Result, 8)
	for i := range results {
		wg.Go(func() { results[i] = c.Check(req, fleet) })
	}
	wg.Wait()
	for _, r := range results {
		assert.Equal(t, want, r)
	}
}

// Selectors are parsed once per Check, not once per cluster: a fleet ten
// times larger costs only the few extra allocations of growing the candidate
// list, not thousands.
func TestCheckAllocationsDoNotGrowWithTheFleet(t *testing.T) {
	req := benchRequest()
	c := mustChecker()
	allocs := func(n int) float64 {
		fleet := benchFleet(n)
		return testing.AllocsPerRun(5, func() { _ = c.Check(req, fleet) })
	}
	small, large := allocs(500), allocs(5000)
	assert.Less(t, large, small+16, "500 clusters: %v allocations, 5000: %v", small, large)
}
