package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The built-in demo runs its whole story. It runs in real time, so the test
// raises the rate to keep it short, and asserts the story's facts, not times.
// One worker makes the story exact on a loaded machine: with two, the second
// may be granted a permit just before the pause (which the demo allows), and
// at 40/s that can be every remaining move.
func TestDemoRunsTheOutageStory(t *testing.T) {
	var out bytes.Buffer
	err := run(context.Background(), []string{"--resource-eviction-rate=40", "--workers=1"}, &out)
	require.NoError(t, err, out.String())
	got := out.String()
	for _, want := range []string{
		"member-1 fails  [1/5 faulty, rate 40.00/s]",
		"evictions paused  [3/5 faulty, rate 0.00/s]",
		"1 held by workers in Limiter.Wait, 0 let through",
		"rate achieved:",
		"done: 6 workloads moved off member-1, none off the recovered clusters",
	} {
		assert.Contains(t, got, want)
	}
	assert.Equal(t, 6, strings.Count(got, "evicted apps/member-1-app-"), got)
	assert.NotContains(t, got, "evicted apps/member-2", "a recovered cluster's workload moved")
	assert.NotContains(t, got, "evicted apps/member-3", "a recovered cluster's workload moved")
}

func TestRunRejectsBadFlags(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"negative rate", []string{"--resource-eviction-rate=-1"}, "resource-eviction-rate"},
		{"threshold above 1", []string{"--unhealthy-cluster-threshold=1.5"}, "unhealthy-cluster-threshold"},
		{"unknown flag", []string{"--no-such-flag"}, "no-such-flag"},
		{"unreadable kubeconfig", []string{"--kubeconfig=/nonexistent/kubeconfig"}, "--kubeconfig /nonexistent/kubeconfig"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			err := run(context.Background(), tt.args, &out)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.wantErr)
		})
	}
}
