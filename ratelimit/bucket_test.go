package ratelimit

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The bucket is stepped as x/time/rate is with ReserveN(t): no clock, no
// goroutine, every call at a time the test chooses.

func at(d time.Duration) time.Time { return t0.Add(d) }

// slots lists the slots of b's line as offsets from t0.
func slots(b *bucket) []time.Duration {
	var s []time.Duration
	for w := b.head; w != nil; w = w.next {
		if w.slot.IsZero() {
			s = append(s, -1)
			continue
		}
		s = append(s, w.slot.Sub(t0))
	}
	return s
}

func TestBucketSlotsAreFixedOnTheClock(t *testing.T) {
	var b bucket
	b.setRate(2, t0) // 500ms apart
	require.True(t, b.take(t0), "the first permit is at once")
	assert.False(t, b.take(at(499*time.Millisecond)), "not before one interval")

	w := b.reserve(at(100 * time.Millisecond))
	assert.Equal(t, []time.Duration{500 * time.Millisecond}, slots(&b))
	assert.False(t, b.due(w, at(499*time.Millisecond)))
	// Found 20ms late, the permit still counts at its slot: the next one is
	// due 500ms after the slot, not after the late wake-up.
	require.True(t, b.due(w, at(520*time.Millisecond)))
	assert.False(t, b.take(at(999*time.Millisecond)))
	assert.True(t, b.take(at(time.Second)))
}

func TestBucketRetimesTheLineAndForgetsThePastOnPause(t *testing.T) {
	var b bucket
	b.setRate(1, t0)
	require.True(t, b.take(t0))
	b.reserve(t0)
	b.reserve(t0)
	assert.Equal(t, []time.Duration{time.Second, 2 * time.Second}, slots(&b))

	b.setRate(0.1, at(500*time.Millisecond))
	assert.Equal(t, []time.Duration{10 * time.Second, 20 * time.Second}, slots(&b), "slower: pushed back")

	b.setRate(0, at(time.Second))
	assert.Equal(t, []time.Duration{-1, -1}, slots(&b), "paused: no slot at all")
	w := b.reserve(at(time.Second))
	assert.False(t, b.due(w, at(time.Hour)), "nothing is due while paused")
	_, ok := b.promise(at(time.Hour))
	assert.False(t, ok, "nothing is promised while paused")

	b.setRate(1, at(time.Hour))
	assert.Equal(t, []time.Duration{time.Hour, time.Hour + time.Second, time.Hour + 2*time.Second}, slots(&b),
		"resumed: the first at once, no debt and no credit from the pause")
}

func TestBucketPromisesStayAndTheLineFitsAroundThem(t *testing.T) {
	var b bucket
	b.setRate(0.5, t0)
	for _, want := range []time.Duration{0, 2 * time.Second, 4 * time.Second} {
		slot, ok := b.promise(t0)
		require.True(t, ok)
		assert.Equal(t, want, slot.Sub(t0))
	}

	b.setRate(2, t0) // the promises at 2s and 4s stay; the gaps between them open
	for range 4 {
		b.reserve(t0)
	}
	assert.Equal(t, []time.Duration{500 * time.Millisecond, time.Second, 1500 * time.Millisecond, 2500 * time.Millisecond}, slots(&b))

	b.setRate(0, at(100*time.Millisecond))
	b.setRate(2, at(3900*time.Millisecond))
	assert.Equal(t, []time.Duration{4500 * time.Millisecond, 5 * time.Second, 5500 * time.Millisecond, 6 * time.Second}, slots(&b),
		"a promise outlives a pause, and the resumed line keeps one interval from it")
}

func TestBucketCancelMovesTheLineUp(t *testing.T) {
	var b bucket
	b.setRate(1, t0)
	require.True(t, b.take(t0))
	first, second, third := b.reserve(t0), b.reserve(t0), b.reserve(t0)
	assert.True(t, b.cancel(first), "the others moved")
	assert.Equal(t, []time.Duration{time.Second, 2 * time.Second}, slots(&b))
	assert.False(t, b.cancel(third), "nobody was behind the last")
	b.reserve(t0)
	assert.Equal(t, []time.Duration{time.Second, 2 * time.Second}, slots(&b), "the next caller takes the freed last slot")
	require.True(t, b.due(second, at(time.Second)))
}
