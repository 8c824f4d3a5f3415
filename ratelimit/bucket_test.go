package ratelimit

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The bucket is stepped as x/time/rate is with ReserveN(t): no clock, no
// goroutine, every call at a time the test chooses.

func at(d time.Duration) time.Time { return t0.Add(d) }

// ns is at(d) as a bucket's time.
func ns(d time.Duration) int64 { return at(d).UnixNano() }

// tryTake takes a permit at now if the bucket holds one.
func tryTake(b *bucket, now int64) (uint64, bool) {
	if b.rate <= 0 || b.full > now {
		return 0, false
	}
	return b.take(now), true
}

func TestBucketHoldsAtMostOnePermit(t *testing.T) {
	var b bucket
	b.setRate(2, ns(0)) // 500ms apart
	_, ok := tryTake(&b, ns(0))
	require.True(t, ok, "a new bucket is full")
	_, ok = tryTake(&b, ns(499*time.Millisecond))
	assert.False(t, ok, "not before one interval")
	_, ok = tryTake(&b, ns(time.Hour))
	assert.True(t, ok, "full again after an hour")
	_, ok = tryTake(&b, ns(time.Hour))
	assert.False(t, ok, "but an hour idle is one permit, not 7200")
}

func TestBucketPauseAddsNothing(t *testing.T) {
	var b bucket
	b.setRate(1, ns(0))
	_, ok := tryTake(&b, ns(0))
	require.True(t, ok)
	b.setRate(0, ns(400*time.Millisecond)) // 0.4 of a permit so far
	_, ok = tryTake(&b, ns(time.Hour))
	assert.False(t, ok, "nothing while paused")
	assert.True(t, b.rate == 0, "no time while paused")
	b.setRate(1, ns(time.Hour))
	assert.Equal(t, ns(time.Hour+600*time.Millisecond), b.full, "resumed: the 0.6 still missing, not a permit at once")

	_, ok = tryTake(&b, ns(2*time.Hour))
	require.True(t, ok)
	b.setRate(0, ns(3*time.Hour)) // full when paused
	b.setRate(1, ns(4*time.Hour))
	assert.Equal(t, ns(4*time.Hour), b.full, "full before the pause: a permit at once on resume")
}

func TestBucketRateChangeKeepsTheLevel(t *testing.T) {
	var b bucket
	b.setRate(1, ns(0))
	_, ok := tryTake(&b, ns(0))
	require.True(t, ok)
	b.setRate(0.5, ns(500*time.Millisecond)) // half a permit, the rest at 0.5/s
	assert.Equal(t, ns(1500*time.Millisecond), b.full)
	b.setRate(2, ns(time.Second)) // three quarters; the last quarter at 2/s
	assert.Equal(t, ns(1125*time.Millisecond), b.full)
}

func TestBucketPromisesTakeAhead(t *testing.T) {
	var b bucket
	b.setRate(0.5, ns(0))
	for _, want := range []time.Duration{0, 2 * time.Second, 4 * time.Second} {
		due := max(ns(0), b.full)
		b.take(due)
		assert.Equal(t, ns(want), due)
	}
	b.setRate(0, ns(time.Second))
	b.setRate(0.5, ns(time.Hour))
	assert.Equal(t, ns(time.Hour+5*time.Second), b.full, "the debt of the promises outlives a pause")
}

func TestBucketGiveBack(t *testing.T) {
	var b bucket
	b.setRate(1, ns(0))
	n, _ := tryTake(&b, ns(0))
	require.True(t, b.giveBack(n))
	assert.Equal(t, ns(0), b.full, "given back at once: full again")

	n, _ = tryTake(&b, ns(0))
	m, ok := tryTake(&b, ns(time.Second))
	require.True(t, ok)
	assert.False(t, b.giveBack(n), "another was taken after it: nothing back")
	assert.Equal(t, ns(2*time.Second), b.full)
	require.True(t, b.giveBack(m))
	assert.Equal(t, ns(time.Second), b.full)

	n, _ = tryTake(&b, ns(time.Second))
	b.setRate(0, ns(1500*time.Millisecond))
	require.True(t, b.giveBack(n))
	b.setRate(1, ns(time.Hour))
	assert.Equal(t, ns(time.Hour), b.full, "given back while paused: full, as if never taken")
}

// TestBucketWindowBound drives a bucket through random rate changes,
// pauses, takes and give-backs, and checks every window against the bound:
// the permits kept (taken and not given back) in [a, b] are at most
// 1 + ∫ rate over [a, b].
func TestBucketWindowBound(t *testing.T) {
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 7))
		var b bucket
		type change struct {
			at   time.Time
			rate float64
		}
		var (
			rates []change
			kept  []time.Time
			last  uint64
			now   = t0
		)
		setRate := func(r float64) {
			b.setRate(r, now.UnixNano())
			rates = append(rates, change{now, r})
		}
		setRate(1)
		for range 300 {
			now = now.Add(time.Duration(rng.IntN(1500)) * time.Millisecond)
			switch op := rng.IntN(10); {
			case op < 2:
				setRate([]float64{0, 0.5, 1, 3}[rng.IntN(4)])
			case op < 3 && last != 0:
				if b.giveBack(last) {
					kept = kept[:len(kept)-1]
				}
				last = 0
			default:
				if n, ok := tryTake(&b, now.UnixNano()); ok {
					kept, last = append(kept, now), n
				}
			}
		}
		integral := func(from, to time.Time) float64 {
			sum := 0.0
			for i, c := range rates {
				end := to
				if i+1 < len(rates) && rates[i+1].at.Before(to) {
					end = rates[i+1].at
				}
				start := c.at
				if from.After(start) {
					start = from
				}
				if end.After(start) {
					sum += c.rate * end.Sub(start).Seconds()
				}
			}
			return sum
		}
		for i := range kept {
			for j := i; j < len(kept); j++ {
				if got, bound := j-i+1, 1+integral(kept[i], kept[j]); float64(got) > bound+1e-9 {
					t.Fatalf("seed %d: %d permits in [%v, %v], bound %.3f", seed, got, kept[i].Sub(t0), kept[j].Sub(t0), bound)
				}
			}
		}
		if len(kept) < 20 {
			t.Fatalf("seed %d: only %d permits: the test proves little", seed, len(kept))
		}
	}
}
