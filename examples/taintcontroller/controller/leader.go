package controller

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// Defaults for the zero durations of LeaderElection, the values Kubernetes'
// own controllers use.
const (
	DefaultLeaseDuration = 15 * time.Second
	DefaultRenewDeadline = 10 * time.Second
	DefaultRetryPeriod   = 2 * time.Second
)

// ErrLeadershipLost is returned by RunWithLeaderElection when this replica
// stopped renewing its Lease before its context ended. The process should
// exit: another replica may already be writing.
var ErrLeadershipLost = errors.New("controller: leadership lost")

// LeaderElection configures RunWithLeaderElection. Client, Namespace, Name
// and Identity are required.
type LeaderElection struct {
	// Client reaches the API server holding the coordination.k8s.io Lease.
	Client kubernetes.Interface
	// Namespace and Name locate the Lease; every replica uses the same.
	Namespace, Name string
	// Identity names this replica in the Lease; it must differ between
	// replicas.
	Identity string
	// LeaseDuration is how long a Lease is honoured without renewal before
	// another replica may take it. Default DefaultLeaseDuration.
	LeaseDuration time.Duration
	// RenewDeadline is how long the leader keeps trying to renew before it
	// gives up leadership. Default DefaultRenewDeadline.
	RenewDeadline time.Duration
	// RetryPeriod is the pause between attempts to acquire or renew.
	// Default DefaultRetryPeriod.
	RetryPeriod time.Duration
	// WatchDog, if set, reports on /healthz whether a leader renews in time.
	WatchDog *leaderelection.HealthzAdaptor
	// OnNewLeader, if set, is called with the identity of each leader this
	// replica observes, itself included.
	OnNewLeader func(identity string)
}

// RunWithLeaderElection campaigns for the Lease and calls run while this
// replica holds it. It returns when ctx ends or leadership is lost, and only
// after run has returned.
//
// On shutdown the order matters: run is stopped and waited for first, and
// only then is the Lease released, so the next leader never writes while
// this one still does. When ctx ends it returns run's error (nil if run never
// started); when the Lease is lost it returns ErrLeadershipLost (joined with
// run's error).
func RunWithLeaderElection(ctx context.Context, le LeaderElection, run func(ctx context.Context) error) error {
	switch {
	case le.Client == nil:
		return errors.New("controller: LeaderElection.Client is nil")
	case le.Namespace == "":
		return errors.New("controller: LeaderElection.Namespace is empty")
	case le.Name == "":
		return errors.New("controller: LeaderElection.Name is empty")
	case le.Identity == "":
		return errors.New("controller: LeaderElection.Identity is empty")
	}
	if le.LeaseDuration == 0 {
		le.LeaseDuration = DefaultLeaseDuration
	}
	if le.RenewDeadline == 0 {
		le.RenewDeadline = DefaultRenewDeadline
	}
	if le.RetryPeriod == 0 {
		le.RetryPeriod = DefaultRetryPeriod
	}

	// The elector runs on a context that ctx does not cancel: releasing the
	// Lease is the last step of shutdown, after run is done.
	electorCtx, stopElector := context.WithCancel(context.WithoutCancel(ctx))
	defer stopElector()

	var (
		mu       sync.Mutex
		stopping bool // ctx ended; a late OnStartedLeading must not run
		started  bool
		runErr   error
		runDone  = make(chan struct{})
	)
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: &resourcelock.LeaseLock{
			LeaseMeta:  metav1.ObjectMeta{Namespace: le.Namespace, Name: le.Name},
			Client:     le.Client.CoordinationV1(),
			LockConfig: resourcelock.ResourceLockConfig{Identity: le.Identity},
		},
		LeaseDuration:   le.LeaseDuration,
		RenewDeadline:   le.RenewDeadline,
		RetryPeriod:     le.RetryPeriod,
		ReleaseOnCancel: true,
		WatchDog:        le.WatchDog,
		Name:            le.Name,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(leaderCtx context.Context) {
				mu.Lock()
				if stopping {
					mu.Unlock()
					return
				}
				started = true
				mu.Unlock()
				defer close(runDone)
				runCtx, cancel := context.WithCancel(leaderCtx)
				defer cancel()
				defer context.AfterFunc(ctx, cancel)()
				runErr = run(runCtx)
			},
			OnStoppedLeading: func() {},
			OnNewLeader: func(identity string) {
				if le.OnNewLeader != nil {
					le.OnNewLeader(identity)
				}
			},
		},
	})
	if err != nil {
		return fmt.Errorf("controller: leader election: %w", err)
	}

	electorDone := make(chan struct{})
	go func() {
		defer close(electorDone)
		elector.Run(electorCtx)
	}()

	lost := false
	select {
	case <-ctx.Done():
	case <-runDone: // run returned on its own while leading
	case <-electorDone:
		// The elector returns on its own only when renewal failed; it has
		// cancelled leaderCtx, which stops run.
		lost = ctx.Err() == nil
	}
	mu.Lock()
	stopping = true
	wasStarted := started
	mu.Unlock()
	if wasStarted {
		<-runDone
	}
	stopElector() // releases the Lease, now that run no longer writes
	<-electorDone
	if lost {
		return errors.Join(ErrLeadershipLost, runErr)
	}
	return runErr
}
