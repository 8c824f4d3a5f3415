package ratelimit

import (
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func TestTrackerHealth(t *testing.T) {
	tests := []struct {
		name string
		ops  func(*Tracker)
		want Health
	}{
		{"empty", func(*Tracker) {}, Health{}},
		{"healthy and faulty clusters are counted", func(tr *Tracker) {
			tr.Set("a", false)
			tr.Set("b", true)
			tr.Set("c", true)
		}, Health{Total: 3, Unhealthy: 2}},
		{"a recovered cluster stops counting as faulty", func(tr *Tracker) {
			tr.Set("a", true)
			tr.Set("a", false)
		}, Health{Total: 1, Unhealthy: 0}},
		{"repeating a state counts once", func(tr *Tracker) {
			tr.Set("a", true)
			tr.Set("a", true)
		}, Health{Total: 1, Unhealthy: 1}},
		{"deleting a faulty cluster removes it from both counts", func(tr *Tracker) {
			tr.Set("a", true)
			tr.Set("b", false)
			tr.Delete("a")
		}, Health{Total: 1, Unhealthy: 0}},
		{"deleting an unknown cluster is ignored", func(tr *Tracker) {
			tr.Set("a", false)
			tr.Delete("zzz")
		}, Health{Total: 1, Unhealthy: 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var tr Tracker // the zero value is usable
			tt.ops(&tr)
			h, err := tr.Health()
			require.NoError(t, err)
			assert.Equal(t, tt.want, h)
		})
	}
}

func TestTrackerChanged(t *testing.T) {
	tr := NewTracker()
	ch := tr.Changed()
	assert.True(t, ch == tr.Changed(), "no change: the same channel")

	tr.Set("a", false)
	require.True(t, closed(ch), "a new cluster changes Total")
	ch = tr.Changed()

	tr.Set("a", false)
	assert.False(t, closed(ch), "repeating a state changes nothing")
	tr.Delete("unknown")
	assert.False(t, closed(ch), "deleting an unknown cluster changes nothing")

	tr.Set("a", true)
	require.True(t, closed(ch), "becoming faulty changes Unhealthy")
	ch = tr.Changed()
	assert.False(t, closed(ch), "the replacement channel is open")

	tr.Delete("a")
	assert.True(t, closed(ch), "deleting a known cluster changes Total")
}

func TestTrackerSetSameStateAllocatesNothing(t *testing.T) {
	tr := NewTracker()
	tr.Set("a", true)
	_ = tr.Changed() // someone is watching
	allocs := testing.AllocsPerRun(100, func() { tr.Set("a", true) })
	assert.Zero(t, allocs)
}

func TestTrackerConcurrentUse(t *testing.T) {
	tr := NewTracker()
	const goroutines, clusters = 8, 200
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range clusters {
				name := fmt.Sprintf("g%d-c%d", g, i)
				tr.Set(name, true)
				_ = tr.Changed()
				tr.Set(name, i%2 == 0)
				if i%4 == 0 {
					tr.Delete(name)
				}
				if _, err := tr.Health(); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	h, err := tr.Health()
	require.NoError(t, err)
	// Per goroutine: 200 clusters, 50 deleted (i%4==0, all even), 150 kept of
	// which the 50 with i%4==2 are faulty.
	assert.Equal(t, Health{Total: goroutines * 150, Unhealthy: goroutines * 50}, h)
}

func TestUnsyncedTracker(t *testing.T) {
	tr := NewUnsyncedTracker()
	ch := tr.Changed()
	tr.Set("a", true)
	tr.Set("b", false)
	tr.Set("c", false)
	tr.Delete("c")
	_, err := tr.Health()
	require.ErrorIs(t, err, ErrNotSynced, "a hand-fed Tracker is unknown until marked synced")
	assert.False(t, closed(ch), "updates before the sync change nothing a Limiter reads")

	tr.MarkSynced()
	assert.True(t, closed(ch), "the sync itself is a change")
	h, err := tr.Health()
	require.NoError(t, err)
	assert.Equal(t, Health{Total: 2, Unhealthy: 1}, h, "updates made before the sync are kept")

	tr.MarkSynced() // again: no double close
	ch = tr.Changed()
	assert.False(t, closed(ch))
	tr.Set("b", true)
	assert.True(t, closed(ch))
}

func TestMarkSyncedOnSyncedTrackers(t *testing.T) {
	tr := NewTracker()
	tr.MarkSynced()
	_, err := tr.Health()
	require.NoError(t, err)

	var zero Tracker
	zero.MarkSynced()
	_, err = zero.Health()
	require.NoError(t, err, "the zero Tracker is synced")
}
