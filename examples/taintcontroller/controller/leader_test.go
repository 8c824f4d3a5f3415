package controller

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func testElection(client *fake.Clientset) LeaderElection {
	return LeaderElection{
		Client: client, Namespace: "kube-system", Name: "taintcontroller", Identity: "replica-a",
		LeaseDuration: time.Second, RenewDeadline: 500 * time.Millisecond, RetryPeriod: 100 * time.Millisecond,
	}
}

func TestRunWithLeaderElectionRejectsBadConfig(t *testing.T) {
	ok := testElection(fake.NewClientset())
	tests := []struct {
		name    string
		edit    func(*LeaderElection)
		wantErr string
	}{
		{"no client", func(le *LeaderElection) { le.Client = nil }, "LeaderElection.Client is nil"},
		{"no namespace", func(le *LeaderElection) { le.Namespace = "" }, "LeaderElection.Namespace is empty"},
		{"no name", func(le *LeaderElection) { le.Name = "" }, "LeaderElection.Name is empty"},
		{"no identity", func(le *LeaderElection) { le.Identity = "" }, "LeaderElection.Identity is empty"},
		{"renew deadline not below lease duration", func(le *LeaderElection) { le.RenewDeadline = 2 * time.Second }, "controller: leader election"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			le := ok
			tt.edit(&le)
			err := RunWithLeaderElection(context.Background(), le, func(context.Context) error {
				t.Error("run called despite a bad config")
				return nil
			})
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.wantErr)
		})
	}
}

// On shutdown run is stopped first and the Lease released after, so a
// standby can take over at once.
func TestRunWithLeaderElectionStopsRunThenReleasesTheLease(t *testing.T) {
	defer goleak.VerifyNone(t)
	client := fake.NewClientset()
	ctx, cancel := context.WithCancel(context.Background())
	leading := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- RunWithLeaderElection(ctx, testElection(client), func(runCtx context.Context) error {
			close(leading)
			<-runCtx.Done()
			// The Lease is still ours while run winds down.
			l, err := client.CoordinationV1().Leases("kube-system").Get(context.Background(), "taintcontroller", metav1.GetOptions{})
			if assert.NoError(t, err) && assert.NotNil(t, l.Spec.HolderIdentity) {
				assert.Equal(t, "replica-a", *l.Spec.HolderIdentity)
			}
			return nil
		})
	}()
	<-leading
	cancel()
	require.NoError(t, <-done)
	l, err := client.CoordinationV1().Leases("kube-system").Get(context.Background(), "taintcontroller", metav1.GetOptions{})
	require.NoError(t, err)
	if l.Spec.HolderIdentity != nil {
		assert.Empty(t, *l.Spec.HolderIdentity, "the Lease is released on shutdown")
	}
}

func TestRunWithLeaderElectionReturnsWhenRunFails(t *testing.T) {
	defer goleak.VerifyNone(t)
	boom := errors.New("caches never synced")
	err := RunWithLeaderElection(context.Background(), testElection(fake.NewClientset()), func(context.Context) error { return boom })
	assert.ErrorIs(t, err, boom)
	assert.NotErrorIs(t, err, ErrLeadershipLost)
}
