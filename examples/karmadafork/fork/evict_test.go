package fork

import (
	"testing"
	"time"

	policyv1alpha1 "github.com/karmada-io/karmada/pkg/apis/policy/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"

	"github.com/failoverkit/failover"
)

// The task is what Karmada's own controllers read back: its purge mode
// follows getPurgeMode of Karmada's taint manager, its reason and producer
// are the taint manager's.
func TestTask(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	cluster := func(mode policyv1alpha1.PurgeMode) *policyv1alpha1.FailoverBehavior {
		return &policyv1alpha1.FailoverBehavior{Cluster: &policyv1alpha1.ClusterFailoverBehavior{PurgeMode: mode}}
	}
	for _, tc := range []struct {
		name     string
		flag     failover.PurgeMode // Options.NoExecuteTaintEvictionPurgeMode
		failover *policyv1alpha1.FailoverBehavior
		want     failover.PurgeMode
	}{
		{"no spec.failover: the flag", failover.PurgeModeDirectly, nil, failover.PurgeModeDirectly},
		{"application failover only: the flag", failover.PurgeModeDirectly, &policyv1alpha1.FailoverBehavior{Application: &policyv1alpha1.ApplicationFailoverBehavior{}}, failover.PurgeModeDirectly},
		{"failover.cluster without a mode: Gracefully, not the flag", failover.PurgeModeDirectly, cluster(""), failover.PurgeModeGracefully},
		{"failover.cluster's mode wins over the flag", failover.PurgeModeGracefully, cluster(policyv1alpha1.PurgeModeDirectly), failover.PurgeModeDirectly},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &forker{opts: Options{NoExecuteTaintEvictionPurgeMode: tc.flag, Now: func() time.Time { return now }}}
			got := f.task(&workv1alpha2.ResourceBindingSpec{Failover: tc.failover}, "taint x untolerated")
			if got.PurgeMode != tc.want {
				t.Errorf("PurgeMode = %q, want %q", got.PurgeMode, tc.want)
			}
			if got.Reason != workv1alpha2.EvictionReasonTaintUntolerated || got.Producer != workv1alpha2.EvictionProducerTaintManager {
				t.Errorf("Reason, Producer = %q, %q, want Karmada's taint manager's", got.Reason, got.Producer)
			}
			if got.Message != "taint x untolerated" {
				t.Errorf("Message = %q, want the decision's reason", got.Message)
			}
			if got.CreationTimestamp == nil || !got.CreationTimestamp.Time.Equal(now) {
				t.Errorf("CreationTimestamp = %v, want %v (Options.Now)", got.CreationTimestamp, now)
			}
		})
	}
}
