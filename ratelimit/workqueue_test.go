package ratelimit

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDynamicRateLimiterSpacesItemsAddedTogether(t *testing.T) {
	l, _, _ := newTracked(t, DefaultConfig(), 5, 0) // 0.5/s
	d := NewDynamicRateLimiter[string](l)
	var got []time.Duration
	for _, item := range []string{"a", "b", "c", "d"} {
		got = append(got, d.When(item))
	}
	assert.Equal(t, []time.Duration{0, 2 * time.Second, 4 * time.Second, 6 * time.Second}, got)
}

func TestDynamicRateLimiterWhilePaused(t *testing.T) {
	l, tr, clk := newTracked(t, DefaultConfig(), 5, 5) // small fleet, all faulty: paused
	custom, _, _ := newTracked(t, DefaultConfig(), 5, 5, WithRecheckDelay(5*time.Second))
	tests := []struct {
		name string
		d    *DynamicRateLimiter[string]
		want time.Duration
	}{
		{"default re-check delay", NewDynamicRateLimiter[string](l), 30 * time.Second},
		{"the Limiter's re-check delay", NewDynamicRateLimiter[string](custom), 5 * time.Second},
		{"a nil Limiter is always paused", NewDynamicRateLimiter[string](nil), 30 * time.Second},
		{"a zero Limiter is always paused", NewDynamicRateLimiter[string](&Limiter{}), 30 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for range 3 {
				assert.Equal(t, tt.want, tt.d.When("x"))
			}
		})
	}

	// Nothing was reserved: on resume the first item goes at once.
	clk.Step(time.Minute)
	fleet(tr, 5, 0)
	d := NewDynamicRateLimiter[string](l)
	assert.Equal(t, time.Duration(0), d.When("x"))
	assert.Equal(t, 2*time.Second, d.When("y"))
}

func TestDynamicRateLimiterSharesTheBucketWithWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, _, clk := newTracked(t, DefaultConfig(), 5, 0) // 0.5/s
		d := NewDynamicRateLimiter[string](l)
		var wg sync.WaitGroup
		defer wg.Wait()

		assert.Equal(t, time.Duration(0), d.When("a"))
		res := waitAsync(l, context.Background(), &wg)
		settle(t, clk, 1)
		clk.Step(2*time.Second - time.Nanosecond)
		settle(t, clk, 1)
		assert.True(t, pending(res), "Wait waits for the permit after the one When took")
		assert.Equal(t, time.Nanosecond, d.When("b"), "When promises the next permit, t0+2s")
		clk.Step(time.Nanosecond)
		settle(t, clk, 1)
		assert.True(t, pending(res), "b has the permit at t0+2s: the waiter's is at t0+4s")
		clk.Step(2 * time.Second)
		require.NoError(t, <-res)
	})
}

func TestDynamicRateLimiterCountsRequeues(t *testing.T) {
	l, _, _ := newTracked(t, DefaultConfig(), 5, 0)
	d := NewDynamicRateLimiter[string](l)
	d.When("a")
	d.When("a")
	d.When("b")
	assert.Equal(t, 2, d.NumRequeues("a"))
	assert.Equal(t, 1, d.NumRequeues("b"))
	d.Forget("a")
	assert.Equal(t, 0, d.NumRequeues("a"))
	assert.Equal(t, 1, d.NumRequeues("b"), "Forget is per item")
}

// TestDynamicRateLimiterPromisesHoldAcrossASpeedUp: a workqueue releases a
// promised item at its time whatever the rate does since, so a speed-up
// brings no permit within an interval of the last promise.
func TestDynamicRateLimiterPromisesHoldAcrossASpeedUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// 4 clusters, large above 2: 3 faulty is 0.5/s, healthy is 2/s.
		cfg := Config{ResourceEvictionRate: 2, SecondaryResourceEvictionRate: 0.5, UnhealthyClusterThreshold: 0.5, LargeClusterNumThreshold: 2}
		l, tr, clk := newTracked(t, cfg, 4, 3)
		d := NewDynamicRateLimiter[string](l)
		for i, want := range []time.Duration{0, 2 * time.Second, 4 * time.Second} {
			assert.Equal(t, want, d.When(string(rune('a'+i))))
		}

		fleet(tr, 4, 0) // 2/s: the promise at t0+4s stays
		var wg sync.WaitGroup
		defer wg.Wait()
		res := waitAsync(l, context.Background(), &wg)
		settle(t, clk, 1)
		clk.Step(4500*time.Millisecond - 1)
		settle(t, clk, 1)
		assert.True(t, pending(res))
		clk.Step(1)
		require.NoError(t, <-res, "a waiter takes t0+4.5s, one interval after the last promise")
		var got []time.Duration
		for _, item := range []string{"d", "e"} {
			got = append(got, d.When(item))
		}
		assert.Equal(t, []time.Duration{500 * time.Millisecond, time.Second}, got)
	})
}
