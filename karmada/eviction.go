package karmada

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	policyv1alpha1 "github.com/karmada-io/karmada/pkg/apis/policy/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/util/jsonpath"

	"github.com/failoverkit/failover"
)

// What Karmada v1.18's taint manager reads from a binding when it decides
// to evict it, and what it writes into the graceful eviction task.

// AppliedPlacementAnnotation is the annotation in which Karmada's resource
// detector records, as JSON, the placement it last applied to a binding
// (pkg/util.PolicyPlacementAnnotation).
const AppliedPlacementAnnotation = "policy.karmada.io/applied-placement"

// The task fields Karmada's taint manager writes
// (workv1alpha2.EvictionProducerTaintManager and
// workv1alpha2.EvictionReasonTaintUntolerated).
const (
	TaintManagerProducer   = "TaintManager"
	TaintUntoleratedReason = "TaintUntolerated"
)

// AppliedTolerations are the cluster tolerations a binding's NoExecute
// taints are judged against, read from its annotations as Karmada v1.18's
// taint manager reads them (helper.GetAppliedPlacement): the placement in
// [AppliedPlacementAnnotation], not spec.placement, which Karmada may have
// rewritten since. Like Karmada's taint manager, which then evicts nothing
// and retries, an annotation that is missing, empty or not a placement is
// an error naming it.
func AppliedTolerations(annotations map[string]string) ([]corev1.Toleration, error) {
	s := annotations[AppliedPlacementAnnotation]
	if s == "" {
		return nil, fmt.Errorf("karmada: annotation %s is missing or empty: the tolerations of the applied placement are unknown", AppliedPlacementAnnotation)
	}
	var p policyv1alpha1.Placement
	if err := json.Unmarshal([]byte(s), &p); err != nil {
		return nil, fmt.Errorf("karmada: annotation %s: %w", AppliedPlacementAnnotation, err)
	}
	return p.ClusterTolerations, nil
}

// appliedTolerations is AppliedTolerations, parsed once per distinct
// annotation (the bindings of one policy share it): the taint manager
// judges every binding of a tainted cluster, and the parse costs more than
// the judgement. The tolerations returned are shared: read them only.
func appliedTolerations(annotations map[string]string) ([]corev1.Toleration, error) {
	s := annotations[AppliedPlacementAnnotation]
	tolerationCache.mu.Lock()
	tols, ok := tolerationCache.m[s]
	tolerationCache.mu.Unlock()
	if ok {
		return tols, nil
	}
	tols, err := AppliedTolerations(annotations)
	if err != nil {
		return nil, err
	}
	tolerationCache.mu.Lock()
	defer tolerationCache.mu.Unlock()
	if len(tolerationCache.m) >= maxTolerationCache || tolerationCache.m == nil {
		tolerationCache.m = make(map[string][]corev1.Toleration)
	}
	tolerationCache.m[s] = tols
	return tols, nil
}

// maxTolerationCache bounds the annotations appliedTolerations remembers;
// past it, it starts again.
const maxTolerationCache = 1024

var tolerationCache struct {
	mu sync.Mutex
	m  map[string][]corev1.Toleration
}

// EvictionPurgeMode is the purge mode Karmada v1.18's taint manager gives
// the graceful eviction task of a binding it evicts (getPurgeMode): with
// spec.failover.cluster, its purgeMode, Gracefully when that is empty;
// without, noExecutePurgeMode (Karmada's
// --no-execute-taint-eviction-purge-mode), where anything but Directly
// means Gracefully. Pass the binding's spec.failover.
func EvictionPurgeMode(spec *policyv1alpha1.FailoverBehavior, noExecutePurgeMode string) failover.PurgeMode {
	if spec != nil && spec.Cluster != nil {
		if spec.Cluster.PurgeMode == "" {
			return failover.PurgeModeGracefully
		}
		return failover.PurgeMode(spec.Cluster.PurgeMode)
	}
	if noExecutePurgeMode == string(policyv1alpha1.PurgeModeDirectly) {
		return failover.PurgeModeDirectly
	}
	return failover.PurgeModeGracefully
}

// PreservedLabelState is the state of a stateful workload that Karmada
// v1.18 carries to the cluster it fails over to (the
// StatefulFailoverInjection feature): for each rule of
// spec.failover.cluster.statePreservation, the rule's JSONPath evaluated on
// the status the binding collected from the evicted cluster
// (status.aggregatedStatus), under the rule's aliasLabelName. The result
// goes into the graceful eviction task's preservedLabelState, from where
// Karmada injects it as labels into the new copy.
//
// Nil without rules. As in Karmada's taint manager, which then does not
// evict, an error when no status has been collected from cluster yet, or
// when a JSONPath does not parse or finds nothing.
func PreservedLabelState(c *policyv1alpha1.ClusterFailoverBehavior, status []workv1alpha2.AggregatedStatusItem, cluster string) (map[string]string, error) {
	if c == nil {
		return nil, nil
	}
	return preservedLabelState("failover.cluster", c.StatePreservation, status, cluster)
}

// ApplicationPreservedLabelState is [PreservedLabelState] for an
// application failover: the rules of spec.failover.application's
// statePreservation, evaluated on the status collected from cluster, as
// Karmada v1.18's application failover controller evaluates them
// (buildTaskOptions, under the StatefulFailoverInjection feature). Nil
// without rules; an error when no status has been collected from cluster
// yet, or a JSONPath does not parse or finds nothing.
func ApplicationPreservedLabelState(a *policyv1alpha1.ApplicationFailoverBehavior, status []workv1alpha2.AggregatedStatusItem, cluster string) (map[string]string, error) {
	if a == nil {
		return nil, nil
	}
	return preservedLabelState("failover.application", a.StatePreservation, status, cluster)
}

// preservedLabelState evaluates sp, the statePreservation at field, on
// the status collected from cluster.
func preservedLabelState(field string, sp *policyv1alpha1.StatePreservation, status []workv1alpha2.AggregatedStatusItem, cluster string) (map[string]string, error) {
	if sp == nil || len(sp.Rules) == 0 {
		return nil, nil
	}
	var raw []byte
	for i := range status {
		if status[i].ClusterName == cluster {
			if status[i].Status != nil {
				raw = status[i].Status.Raw
			}
			break
		}
	}
	if raw == nil {
		return nil, fmt.Errorf("karmada: %s.statePreservation: no status collected from cluster %s yet (status.aggregatedStatus)", field, cluster)
	}
	var obj any
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, fmt.Errorf("karmada: status.aggregatedStatus of cluster %s: %w", cluster, err)
	}
	out := make(map[string]string, len(sp.Rules))
	for i, r := range sp.Rules {
		j := jsonpath.New(r.AliasLabelName)
		j.AllowMissingKeys(false)
		if err := j.Parse(r.JSONPath); err != nil {
			return nil, fmt.Errorf("karmada: %s.statePreservation.rules[%d].jsonPath %q: %w", field, i, r.JSONPath, err)
		}
		var b bytes.Buffer
		if err := j.Execute(&b, obj); err != nil {
			return nil, fmt.Errorf("karmada: %s.statePreservation.rules[%d].jsonPath %q on the status of cluster %s: %w", field, i, r.JSONPath, cluster, err)
		}
		out[r.AliasLabelName] = b.String()
	}
	return out, nil
}

// MaxClustersInTransitAnnotation on a ResourceBinding or
// ClusterResourceBinding is its own budget of clusters in transit, which
// overrides the engine's EvictorOptions.MaxClustersInTransit (the
// controllers' --max-clusters-in-transit): a non-negative integer, 0 for
// unlimited.
const MaxClustersInTransitAnnotation = "failover.karmada.io/max-clusters-in-transit"

// DecideBindingEviction is [failover.DecideEviction] for one binding on one
// cluster at now, as Karmada v1.18's taint manager decides: NoExecute taints
// count only with enableNoExecute (Karmada's
// --enable-no-execute-taint-eviction; without, they are left out), judged
// against the tolerations of the applied placement in the binding's
// annotations ([AppliedTolerations]), read only when a NoExecute taint is
// left to judge. PreferNoExecute taints follow spec.failover.cluster. An
// applied placement or a spec.failover.cluster that cannot be read is an
// error naming it.
func DecideBindingEviction(annotations map[string]string, spec *workv1alpha2.ResourceBindingSpec, cluster *clusterv1alpha1.Cluster, enableNoExecute bool, now time.Time) (failover.EvictionDecision, error) {
	if spec == nil || cluster == nil {
		return failover.EvictionDecision{}, errors.New("karmada: DecideBindingEviction: the binding's spec and the cluster must not be nil")
	}
	taints := make([]corev1.Taint, 0, len(cluster.Spec.Taints))
	noExecute := false
	for _, t := range cluster.Spec.Taints {
		if t.Effect == corev1.TaintEffectNoExecute {
			if !enableNoExecute {
				continue
			}
			noExecute = true
		}
		taints = append(taints, t)
	}
	var tols []corev1.Toleration
	if noExecute {
		var err error
		if tols, err = appliedTolerations(annotations); err != nil {
			return failover.EvictionDecision{}, err
		}
	}
	var fb *failover.ClusterFailoverBehavior
	if spec.Failover != nil {
		var err error
		if fb, err = FromClusterFailoverBehavior(spec.Failover.Cluster); err != nil {
			return failover.EvictionDecision{}, err
		}
	}
	return failover.DecideEviction(taints, tols, fb, now), nil
}
