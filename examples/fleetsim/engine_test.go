package main

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// A run whose context ends mid-run, with items queued, stops at once and
// says why (TestMain's goleak checks that no goroutine is left).
func TestRunStopsTheQueuesWhenCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := cancelOn{cancel: cancel, after: "taint manager queued"}
	if err := run(ctx, nil, &out); !errors.Is(err, context.Canceled) {
		t.Errorf("run: %v, want context.Canceled", err)
	}
	if !out.seen {
		t.Error("the run never queued an eviction")
	}
}

// cancelOn cancels once a write holds after.
type cancelOn struct {
	cancel func()
	after  string
	seen   bool
}

func (c *cancelOn) Write(p []byte) (int, error) {
	if strings.Contains(string(p), c.after) {
		c.seen = true
		c.cancel()
	}
	return len(p), nil
}
