package karmada_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	policyv1alpha1 "github.com/karmada-io/karmada/pkg/apis/policy/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/failoverkit/failover"
	"github.com/failoverkit/failover/karmada"
	"github.com/failoverkit/failover/prescheduling"
)

// source is where the generator draws its choices: a seeded random number
// generator for the differential run, the fuzzer's bytes for the fuzz target.
type source interface {
	// intn returns a choice in [0, n), n > 0.
	intn(n int) int
}

type randSource struct{ r *rand.Rand }

func (s randSource) intn(n int) int { return s.r.IntN(n) }

// byteSource reads one byte per choice and chooses 0 once they run out, so
// every byte string is a case and a short one is a small case.
type byteSource struct{ b []byte }

func (s *byteSource) intn(n int) int {
	if len(s.b) == 0 {
		return 0
	}
	v := int(s.b[0])
	s.b = s.b[1:]
	return v % n
}

func pick[T any](s source, xs ...T) T { return xs[s.intn(len(xs))] }

// chance is true with probability 1/n.
func chance(s source, n int) bool { return s.intn(n) == 0 }

// diffCase is one generated failover: a fleet before and after some of its
// clusters fail, a workload Karmada scheduled on the fleet before, and the
// clusters it is evicted from.
type diffCase struct {
	// before is the fleet when Karmada scheduled the workload, after the one
	// the eviction sees: the evicted clusters carry a NoExecute taint and
	// are not ready, and other clusters may have changed too.
	before, after []*clusterv1alpha1.Cluster
	// spec is the binding as Karmada scheduled it on before: spec.clusters
	// is that schedule; spec.gracefulEvictionTasks are earlier evictions.
	spec     *workv1alpha2.ResourceBindingSpec
	observed string // status.schedulerObservedAffinityName
	evicting []string
}

const (
	notReadyKey    = "cluster.karmada.io/not-ready"
	dedicatedKey   = "dedicated"
	maintenanceKey = "maintenance"
)

// genFleet makes 2 to 10 clusters as Karmada's API server stores them (the
// deprecated spec.zone migrated into spec.zones), some missing a provider,
// region or zone, some tainted (NoSchedule, or NoExecute: drained for
// maintenance, or recovering: Ready again, the taint policy's not-ready
// taint kept through its removal window, the cluster controller's
// NoSchedule one gone), each with a resource summary or none yet. genCase
// fails some of them later (fail).
func genFleet(s source) []*clusterv1alpha1.Cluster {
	n := 2 + s.intn(9)
	out := make([]*clusterv1alpha1.Cluster, n)
	for i := range out {
		c := &clusterv1alpha1.Cluster{}
		c.Name = fmt.Sprintf("m%d", i+1)
		c.Labels = map[string]string{}
		if team := pick(s, "a", "b", ""); team != "" {
			c.Labels["team"] = team
		}
		c.Labels["tier"] = pick(s, "gold", "silver")
		c.Spec.Provider = pick(s, "P1", "P2", "P3", "")
		c.Spec.Region = pick(s, "R1", "R2", "R3", "")
		switch s.intn(4) {
		case 1, 2:
			c.Spec.Zones = []string{pick(s, "Z1", "Z2", "Z3", "Z4")}
		case 3:
			c.Spec.Zones = []string{pick(s, "Z1", "Z2"), pick(s, "Z3", "Z4")}
		}
		switch s.intn(16) {
		case 0, 1:
			c.Spec.Taints = []corev1.Taint{{Key: dedicatedKey, Value: "x", Effect: corev1.TaintEffectNoSchedule}}
		case 2:
			c.Spec.Taints = []corev1.Taint{{Key: maintenanceKey, Effect: corev1.TaintEffectNoExecute}}
		case 3:
			c.Spec.Taints = []corev1.Taint{{Key: notReadyKey, Effect: corev1.TaintEffectNoExecute}}
		}
		c.Status.Conditions = []metav1.Condition{{Type: clusterv1alpha1.ClusterConditionReady, Status: metav1.ConditionTrue}}
		c.Status.APIEnablements = []clusterv1alpha1.APIEnablement{{GroupVersion: "apps/v1", Resources: []clusterv1alpha1.APIResource{{Name: "deployments", Kind: "Deployment"}}}}
		if !chance(s, 8) {
			c.Status.ResourceSummary = genSummary(s)
		}
		out[i] = c
	}
	return out
}

// genSummary leaves room for 0 to 11 pods, 0 to 7.5 CPUs and 0 to 14 GiB of
// memory: few enough, against 1 to 12 replicas, that capacity decides often.
func genSummary(s source) *clusterv1alpha1.ResourceSummary {
	pods, cpu, mem := int64(s.intn(12)), int64(s.intn(16))*500, int64(s.intn(15))
	return &clusterv1alpha1.ResourceSummary{
		Allocatable: corev1.ResourceList{
			corev1.ResourcePods:   *resource.NewQuantity(110, resource.DecimalSI),
			corev1.ResourceCPU:    *resource.NewMilliQuantity(16000, resource.DecimalSI),
			corev1.ResourceMemory: *resource.NewQuantity(64<<30, resource.BinarySI),
		},
		Allocated: corev1.ResourceList{
			corev1.ResourcePods:   *resource.NewQuantity(110-pods, resource.DecimalSI),
			corev1.ResourceCPU:    *resource.NewMilliQuantity(16000-cpu, resource.DecimalSI),
			corev1.ResourceMemory: *resource.NewQuantity((64-mem)<<30, resource.BinarySI),
		},
	}
}

// genAffinity selects clusters by labels, by fields (region, provider or
// zone) or by names, or is nil.
func genAffinity(s source, n int) *policyv1alpha1.ClusterAffinity {
	a := &policyv1alpha1.ClusterAffinity{}
	switch s.intn(5) {
	case 0:
		return nil
	case 1:
		if chance(s, 2) {
			a.LabelSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"tier": pick(s, "gold", "silver")}}
		} else {
			a.LabelSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
				Key: "team", Operator: pick(s, metav1.LabelSelectorOpIn, metav1.LabelSelectorOpNotIn), Values: []string{pick(s, "a", "b")}}}}
		}
	case 2:
		key := pick(s, "region", "provider", "zone")
		values := map[string][]string{"region": {"R1", "R2", "R3"}, "provider": {"P1", "P2", "P3"}, "zone": {"Z1", "Z2", "Z3", "Z4"}}[key]
		v := []string{pick(s, values...)}
		if chance(s, 2) {
			v = append(v, pick(s, values...))
		}
		a.FieldSelector = &policyv1alpha1.FieldSelector{MatchExpressions: []corev1.NodeSelectorRequirement{{
			Key: key, Operator: pick(s, corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn), Values: v}}}
	case 3:
		for i := range n {
			if !chance(s, 3) {
				a.ClusterNames = append(a.ClusterNames, fmt.Sprintf("m%d", i+1))
			}
		}
		if len(a.ClusterNames) == 0 {
			a.ClusterNames = []string{"m1"}
		}
	case 4:
		a.ExcludeClusters = []string{fmt.Sprintf("m%d", 1+s.intn(n))}
		if chance(s, 2) {
			a.LabelSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"tier": pick(s, "gold", "silver")}}
		}
	}
	return a
}

// genPlacement makes a placement as Karmada's admission webhooks leave it:
// spread constraints that pass its validation (a cluster constraint beside
// any by field; maxGroups never below minGroups) with minGroups defaulted to
// 1, and a Divided placement without a division preference made Weighted.
func genPlacement(s source, n int) *policyv1alpha1.Placement {
	p := &policyv1alpha1.Placement{}
	if chance(s, 5) {
		for _, name := range []string{"primary", "backup"} {
			a := genAffinity(s, n)
			if a == nil {
				a = &policyv1alpha1.ClusterAffinity{}
			}
			p.ClusterAffinities = append(p.ClusterAffinities, policyv1alpha1.ClusterAffinityTerm{AffinityName: name, ClusterAffinity: *a})
		}
	} else {
		p.ClusterAffinity = genAffinity(s, n)
	}
	// Tolerations of NoSchedule taints, and of a NoExecute taint other than
	// the one failed clusters get (an eviction is for a taint the workload
	// does not tolerate); rarely, of everything.
	dedicated := corev1.Toleration{Key: dedicatedKey, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}
	maintenance := corev1.Toleration{Key: maintenanceKey, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}
	switch s.intn(12) {
	case 0, 1:
		p.ClusterTolerations = []corev1.Toleration{dedicated}
	case 2:
		p.ClusterTolerations = []corev1.Toleration{maintenance}
	case 3:
		p.ClusterTolerations = []corev1.Toleration{dedicated, maintenance}
	case 4:
		p.ClusterTolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
	}
	groups := func() (min, max int) {
		min = 1 + s.intn(3)
		max = min + s.intn(3)
		if chance(s, 12) {
			max = 0
		}
		return min, max
	}
	var fields []policyv1alpha1.SpreadFieldValue
	switch s.intn(9) {
	case 0, 1, 2:
	case 3, 4:
		fields = []policyv1alpha1.SpreadFieldValue{policyv1alpha1.SpreadByFieldCluster}
	default:
		fields = []policyv1alpha1.SpreadFieldValue{pick(s, policyv1alpha1.SpreadByFieldRegion, policyv1alpha1.SpreadByFieldZone, policyv1alpha1.SpreadByFieldProvider), policyv1alpha1.SpreadByFieldCluster}
		if chance(s, 3) {
			other := pick(s, policyv1alpha1.SpreadByFieldRegion, policyv1alpha1.SpreadByFieldZone, policyv1alpha1.SpreadByFieldProvider)
			if other != fields[0] {
				fields = append(fields, other)
			}
		}
	}
	for _, f := range fields {
		lo, hi := groups()
		p.SpreadConstraints = append(p.SpreadConstraints, policyv1alpha1.SpreadConstraint{SpreadByField: f, MinGroups: lo, MaxGroups: hi})
	}
	divided := func(pref policyv1alpha1.ReplicaDivisionPreference, wp *policyv1alpha1.ClusterPreferences) *policyv1alpha1.ReplicaSchedulingStrategy {
		return &policyv1alpha1.ReplicaSchedulingStrategy{ReplicaSchedulingType: policyv1alpha1.ReplicaSchedulingTypeDivided, ReplicaDivisionPreference: pref, WeightPreference: wp}
	}
	switch s.intn(8) {
	case 0:
	case 1:
		p.ReplicaScheduling = &policyv1alpha1.ReplicaSchedulingStrategy{ReplicaSchedulingType: policyv1alpha1.ReplicaSchedulingTypeDuplicated}
	case 2, 3:
		p.ReplicaScheduling = divided(policyv1alpha1.ReplicaDivisionPreferenceAggregated, nil)
	case 4:
		var list []policyv1alpha1.StaticClusterWeight
		for range 1 + s.intn(3) {
			var target policyv1alpha1.ClusterAffinity
			if chance(s, 2) {
				target.ClusterNames = []string{fmt.Sprintf("m%d", 1+s.intn(n))}
			} else {
				target.LabelSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"tier": pick(s, "gold", "silver")}}
			}
			list = append(list, policyv1alpha1.StaticClusterWeight{TargetCluster: target, Weight: int64(1 + s.intn(3))})
		}
		p.ReplicaScheduling = divided(policyv1alpha1.ReplicaDivisionPreferenceWeighted, &policyv1alpha1.ClusterPreferences{StaticWeightList: list})
	case 5, 6:
		p.ReplicaScheduling = divided(policyv1alpha1.ReplicaDivisionPreferenceWeighted, &policyv1alpha1.ClusterPreferences{DynamicWeight: policyv1alpha1.DynamicWeightByAvailableReplicas})
	case 7:
		// What the webhook makes of a Divided placement without a
		// preference: Weighted, with no weights (every cluster alike).
		p.ReplicaScheduling = divided(policyv1alpha1.ReplicaDivisionPreferenceWeighted, nil)
	}
	return p
}

// genCase makes one case: Karmada schedules the workload on the fleet
// before; some of the clusters it chose then fail (a NoExecute taint, Ready
// False) and are evicted, and others may fail or fill up meanwhile. It
// returns nil when Karmada could not schedule the workload in the first place
// (there is then nothing to evict).
func genCase(s source) *diffCase {
	before := genFleet(s)
	n := len(before)
	spec := &workv1alpha2.ResourceBindingSpec{
		Resource:  workv1alpha2.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "default", Name: "web", UID: "uid-web"},
		Placement: genPlacement(s, n),
		Replicas:  int32(1 + s.intn(12)),
	}
	switch s.intn(3) {
	case 1:
		spec.ReplicaRequirements = &workv1alpha2.ReplicaRequirements{ResourceRequest: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")}}
	case 2:
		spec.ReplicaRequirements = &workv1alpha2.ReplicaRequirements{ResourceRequest: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")}}
	}
	if chance(s, 6) {
		// An earlier eviction whose task is still open.
		spec.GracefulEvictionTasks = []workv1alpha2.GracefulEvictionTask{{FromCluster: fmt.Sprintf("m%d", 1+s.intn(n)), Reason: "TaintUntolerated", Producer: "taint-manager"}}
	}
	scheduled, observed, err := karmadaSchedule(before, spec, &workv1alpha2.ResourceBindingStatus{})
	if err != nil || len(scheduled) == 0 {
		return nil
	}
	spec.Clusters = scheduled

	after := make([]*clusterv1alpha1.Cluster, n)
	for i, c := range before {
		after[i] = c.DeepCopy()
	}
	byName := func(name string) *clusterv1alpha1.Cluster {
		return after[slices.IndexFunc(after, func(c *clusterv1alpha1.Cluster) bool { return c.Name == name })]
	}
	order := s.intn(len(scheduled))
	k := 1 + s.intn(min(3, len(scheduled)))
	var evicting []string
	for i := range k {
		name := scheduled[(order+i)%len(scheduled)].Name
		evicting = append(evicting, name)
		fail(byName(name))
	}
	// Meanwhile another cluster may fail (not yet evicted from), or one fill
	// up or free room.
	if chance(s, 4) {
		fail(after[s.intn(n)])
	}
	if chance(s, 3) {
		c := after[s.intn(n)]
		c.Status.ResourceSummary = genSummary(s)
	}
	return &diffCase{before: before, after: after, spec: spec, observed: observed, evicting: evicting}
}

// fail gives c what a failed cluster has in Karmada v1.18: Ready False;
// from its cluster controller, the not-ready NoSchedule taint
// (taintClusterByCondition adds it whatever other taints the cluster has,
// and no default toleration tolerates it); and from a ClusterTaintPolicy on
// Ready False, the not-ready NoExecute taint that evicts (v1.18's cluster
// controller adds no NoExecute taint itself).
func fail(c *clusterv1alpha1.Cluster) {
	c.Status.Conditions = []metav1.Condition{{Type: clusterv1alpha1.ClusterConditionReady, Status: metav1.ConditionFalse}}
	for _, effect := range []corev1.TaintEffect{corev1.TaintEffectNoSchedule, corev1.TaintEffectNoExecute} {
		if !slices.ContainsFunc(c.Spec.Taints, func(t corev1.Taint) bool { return t.Key == notReadyKey && t.Effect == effect }) {
			c.Spec.Taints = append(c.Spec.Taints, corev1.Taint{Key: notReadyKey, Effect: effect, TimeAdded: ptr.To(metav1.Unix(0, 0))})
		}
	}
}

// evicted is the binding after the eviction, as Karmada's taint manager
// (and the library's eviction controller) leaves it: the evicted clusters
// moved from spec.clusters into graceful eviction tasks.
func (c *diffCase) evicted() *workv1alpha2.ResourceBindingSpec {
	spec := c.spec.DeepCopy()
	spec.Clusters = slices.DeleteFunc(spec.Clusters, func(t workv1alpha2.TargetCluster) bool { return slices.Contains(c.evicting, t.Name) })
	for _, t := range c.spec.Clusters {
		if slices.Contains(c.evicting, t.Name) {
			spec.GracefulEvictionTasks = append(spec.GracefulEvictionTasks, workv1alpha2.GracefulEvictionTask{
				FromCluster: t.Name, Replicas: ptr.To(t.Replicas), Reason: "TaintUntolerated", Producer: "taint-manager"})
		}
	}
	return spec
}

// String prints the case as YAML, to paste into a regression test.
func (c *diffCase) String() string {
	type cluster struct {
		Name     string                           `json:"name"`
		Labels   map[string]string                `json:"labels,omitempty"`
		Spec     clusterv1alpha1.ClusterSpec      `json:"spec"`
		Ready    bool                             `json:"ready"`
		Resource *clusterv1alpha1.ResourceSummary `json:"resourceSummary,omitempty"`
	}
	short := func(cs []*clusterv1alpha1.Cluster) []cluster {
		var out []cluster
		for _, c := range cs {
			out = append(out, cluster{c.Name, c.Labels, c.Spec, c.Status.Conditions[0].Status == metav1.ConditionTrue, c.Status.ResourceSummary})
		}
		return out
	}
	b, err := yaml.Marshal(map[string]any{
		"before": short(c.before), "after": short(c.after), "spec": c.spec,
		"observedAffinity": c.observed, "evicting": c.evicting,
	})
	if err != nil {
		return err.Error()
	}
	return strings.TrimSpace(string(b))
}

// verdict is what each side says of one case.
type verdict struct {
	ours   prescheduling.Result
	placed bool // Karmada's scheduler placed what the eviction removed
	result []workv1alpha2.TargetCluster
	err    error // Karmada's
	// class names what the library refuses by design in Karmada's result,
	// if anything (see classify).
	class string
}

// classFaultyTarget names the result of Karmada's scheduler that the
// library refuses by design, as its package doc says: moving what the
// eviction removes onto a faulty cluster that does not run the workload yet
// (one whose NoExecute taint the placement tolerates).
const classFaultyTarget = "a faulty cluster that does not run the workload yet takes some"

// classify returns classFaultyTarget when Karmada's result does that, or "".
func (c *diffCase) classify(result []workv1alpha2.TargetCluster, fleet []clusterv1alpha1.Cluster) string {
	kept := map[string]bool{}
	for _, t := range c.spec.Clusters {
		if !slices.Contains(c.evicting, t.Name) {
			kept[t.Name] = true
		}
	}
	for _, t := range result {
		cl := fleet[slices.IndexFunc(fleet, func(x clusterv1alpha1.Cluster) bool { return x.Name == t.Name })]
		faulty := slices.ContainsFunc(cl.Spec.Taints, func(t corev1.Taint) bool { return t.Effect == corev1.TaintEffectNoExecute })
		if faulty && !kept[t.Name] {
			return classFaultyTarget
		}
	}
	return ""
}

// check asks both sides. The library: prescheduling.Check on the fleet after
// the failure, with karmada.Capacity over its resource summaries. Karmada:
// its scheduler on the binding as the eviction leaves it (the evicted
// clusters moved into graceful eviction tasks, which its ClusterEviction
// filter keeps out), on the same fleet. Karmada has placed what the eviction
// removed when it schedules without error and, for Duplicated, its result
// has as many clusters as before the eviction (every evicted copy is
// replaced); for Divided an error-free result holds every replica.
func (c *diffCase) check() verdict {
	req, err := karmada.PreschedulingRequest(c.spec, c.evicting...)
	if err != nil {
		panic(err) // the generator writes nothing the conversion refuses
	}
	req.ObservedAffinityName = c.observed
	fleet := make([]failover.Cluster, len(c.after))
	values := make([]clusterv1alpha1.Cluster, len(c.after))
	for i, cl := range c.after {
		if fleet[i], err = karmada.FromCluster(cl); err != nil {
			panic(err)
		}
		values[i] = *cl
	}
	checker, err := prescheduling.NewChecker(prescheduling.WithCapacity(karmada.Capacity(values, c.spec.ReplicaRequirements)))
	if err != nil {
		panic(err)
	}
	v := verdict{ours: checker.Check(req, fleet)}
	v.result, _, v.err = karmadaSchedule(c.after, c.evicted(), &workv1alpha2.ResourceBindingStatus{SchedulerObservedAffinityName: c.observed})
	if v.err == nil {
		v.class = c.classify(v.result, values)
		if c.spec.Placement.ReplicaSchedulingType() == policyv1alpha1.ReplicaSchedulingTypeDuplicated {
			v.placed = len(v.result) >= len(c.spec.Clusters)
		} else {
			var sum int32
			for _, t := range v.result {
				sum += t.Replicas
			}
			v.placed = sum == c.spec.Replicas
		}
	}
	return v
}

func (v verdict) String() string {
	karmadaSays := fmt.Sprintf("Karmada schedules %v", v.result)
	if v.err != nil {
		karmadaSays = "Karmada fails: " + v.err.Error()
	}
	return fmt.Sprintf("library: feasible=%v (%s: %s); %s", v.ours.Feasible, v.ours.Code, v.ours.Reason, karmadaSays)
}

// tally counts the outcomes of a differential run.
type tally struct {
	generated, unscheduled, compared int
	agreeYes, agreeNo                int
	unsound, incomplete              []string // the first few of each, printed
	nUnsound, nIncomplete            int
	byCode                           map[prescheduling.Code]int // incomplete answers by the library's code
	byClass                          map[string]int             // incomplete answers by classify's class
	features                         map[string]int             // compared cases by what they exercise
}

// features names what a case exercises, for the run's log: that the
// generator reaches every feature the test claims to cover.
func (c *diffCase) features() []string {
	p := c.spec.Placement
	var out []string
	switch rs := p.ReplicaScheduling; {
	case p.ReplicaSchedulingType() == policyv1alpha1.ReplicaSchedulingTypeDuplicated:
		out = append(out, "duplicated")
	case rs.ReplicaDivisionPreference == policyv1alpha1.ReplicaDivisionPreferenceAggregated:
		out = append(out, "aggregated")
	case rs.WeightPreference == nil:
		out = append(out, "weighted evenly")
	case rs.WeightPreference.DynamicWeight != "":
		out = append(out, "dynamic weights")
	default:
		out = append(out, "static weights")
	}
	for _, sc := range p.SpreadConstraints {
		out = append(out, "spread by "+string(sc.SpreadByField))
		if sc.MaxGroups == 0 {
			out = append(out, "no maxGroups")
		}
	}
	affinity := func(a *policyv1alpha1.ClusterAffinity) {
		if a == nil {
			return
		}
		if a.LabelSelector != nil {
			out = append(out, "affinity by labels")
		}
		if a.FieldSelector != nil {
			out = append(out, "affinity by fields")
		}
		if len(a.ClusterNames) > 0 {
			out = append(out, "affinity by names")
		}
		if len(a.ExcludeClusters) > 0 {
			out = append(out, "affinity excluding")
		}
	}
	affinity(p.ClusterAffinity)
	for i := range p.ClusterAffinities {
		affinity(&p.ClusterAffinities[i].ClusterAffinity)
	}
	if len(p.ClusterAffinities) > 0 {
		out = append(out, "clusterAffinities, from "+c.observed)
	}
	for _, t := range p.ClusterTolerations {
		if t.Key == "" {
			out = append(out, "tolerates every taint")
		} else {
			out = append(out, fmt.Sprintf("tolerates %s:%s", t.Key, t.Effect))
		}
	}
	if c.spec.ReplicaRequirements != nil {
		out = append(out, "replica requirements")
	}
	out = append(out, fmt.Sprintf("%d evicted", len(c.evicting)))
	if len(c.spec.GracefulEvictionTasks) > 0 {
		out = append(out, "an earlier task open")
	}
	return out
}

func (t *tally) add(c *diffCase, v verdict) {
	t.compared++
	if t.features == nil {
		t.features = map[string]int{}
	}
	for _, f := range c.features() {
		t.features[f]++
	}
	switch {
	case v.ours.Feasible && v.placed:
		t.agreeYes++
	case !v.ours.Feasible && !v.placed:
		t.agreeNo++
	case v.ours.Feasible:
		t.nUnsound++
		if len(t.unsound) < 5 {
			t.unsound = append(t.unsound, c.String()+"\n"+v.String())
		}
	default:
		t.nIncomplete++
		if t.byCode == nil {
			t.byCode = map[prescheduling.Code]int{}
		}
		t.byCode[v.ours.Code]++
		if t.byClass == nil {
			t.byClass = map[string]int{}
		}
		t.byClass[v.class]++
		if v.class == "" && len(t.incomplete) < 5 {
			t.incomplete = append(t.incomplete, c.String()+"\n"+v.String())
		}
	}
}
