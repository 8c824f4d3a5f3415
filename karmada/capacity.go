package karmada

import (
	"math"
	"slices"
	"strconv"
	"strings"

	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// MaxReplicas returns how many more replicas needing req a cluster with
// summary can take, computed as Karmada v1.18's general estimator does: the
// pods still allowed (allocatable − allocated − allocating), bounded for each
// resource req requests by what is left of it divided by the request. CPU
// is counted in millicores, every other resource in whole units (a request
// of 1.5 units counts as 2, as in Karmada). A resource the cluster does not
// report, or has none of, leaves room for no replica; a nil req is bounded by
// pods alone. A nil summary (the cluster has not reported one yet) is 0, as
// the estimator gives it.
//
// Karmada refines this with resource models (spec.resourceModels) when they
// are reported, and may deduct workloads it has just assumed; MaxReplicas
// does neither, so it may count more room than the scheduler finds, never
// less. A quantity too large for an int64 saturates instead of wrapping
// around (Karmada's estimator wraps).
func MaxReplicas(summary *clusterv1alpha1.ResourceSummary, req *workv1alpha2.ReplicaRequirements) int32 {
	return RoomOf(summary).MaxReplicas(NeedsOf(req))
}

// Room is what a resource summary leaves: allocatable − allocated −
// allocating of pods and of each allocatable resource (CPU in millicores),
// computed once per summary so that asking it for each workload costs a
// few integer operations (the engine's Fleet keeps one per cluster). Its
// zero value is the room of a cluster that reported no summary: none.
type Room struct {
	reported bool // a summary was reported: nil is room for nothing
	pods     int64
	left     map[corev1.ResourceName]int64
}

// RoomOf reads the room summary leaves, once; a nil summary leaves none.
// The Room shares no memory with summary.
func RoomOf(summary *clusterv1alpha1.ResourceSummary) Room {
	if summary == nil {
		return Room{}
	}
	s := summary
	r := Room{reported: true, pods: left(s, corev1.ResourcePods, false), left: make(map[corev1.ResourceName]int64, len(s.Allocatable))}
	for name := range s.Allocatable {
		r.left[name] = left(s, name, name == corev1.ResourceCPU)
	}
	return r
}

// need is what one replica requests of one resource, in the unit Room
// counts it in.
type need struct {
	name corev1.ResourceName
	n    int64
}

// Needs is what one replica of a workload requests, read once from its
// replica requirements, in the units a [Room] counts: asked of many
// clusters' rooms, it is not read again. Its zero value requests nothing
// but a pod.
type Needs struct{ list []need }

// NeedsOf reads what one replica needing req (a binding's
// spec.replicaRequirements) requests, leaving out the resources it
// requests none of. A nil req requests nothing but a pod.
func NeedsOf(req *workv1alpha2.ReplicaRequirements) Needs {
	if req == nil {
		return Needs{}
	}
	out := make([]need, 0, len(req.ResourceRequest))
	for name, q := range req.ResourceRequest {
		if n := value(q, name == corev1.ResourceCPU); n > 0 {
			out = append(out, need{name, n})
		}
	}
	return Needs{list: out}
}

// Key names n, whatever the order of its resources: what
// [Room.MaxReplicas] reads besides the room, for
// prescheduling.Capacity.Key. Needs with the same Key fit alike.
func (n Needs) Key() string {
	if len(n.list) == 0 {
		return "pods"
	}
	parts := make([]string, len(n.list))
	for i, nd := range n.list {
		parts[i] = string(nd.name) + "=" + strconv.FormatInt(nd.n, 10)
	}
	slices.Sort(parts)
	return strings.Join(parts, ",")
}

// MaxReplicas is [MaxReplicas] on the room r, for a replica that needs
// needs.
func (r Room) MaxReplicas(needs Needs) int32 {
	if !r.reported || r.pods <= 0 {
		return 0
	}
	most := r.pods
	for _, nd := range needs.list {
		avail, ok := r.left[nd.name]
		if !ok || avail <= 0 {
			return 0
		}
		most = min(most, avail/nd.n)
	}
	return int32(min(most, math.MaxInt32))
}

// left is allocatable − allocated − allocating of one resource, in
// millicores for CPU.
func left(s *clusterv1alpha1.ResourceSummary, name corev1.ResourceName, milli bool) int64 {
	a := s.Allocatable[name]
	a = a.DeepCopy()
	if q, ok := s.Allocated[name]; ok {
		a.Sub(q)
	}
	if q, ok := s.Allocating[name]; ok {
		a.Sub(q)
	}
	return value(a, milli)
}

// The bounds past which a quantity's int64 value (or milli value) would
// wrap around.
var (
	maxValue      = *resource.NewQuantity(math.MaxInt64, resource.DecimalSI)
	minValue      = *resource.NewQuantity(math.MinInt64, resource.DecimalSI)
	maxMilliValue = *resource.NewMilliQuantity(math.MaxInt64, resource.DecimalSI)
	minMilliValue = *resource.NewMilliQuantity(math.MinInt64, resource.DecimalSI)
)

// value is q's value rounded up, in millis with milli, saturated at the
// int64 bounds where Quantity.Value would wrap around (1e19 pods would read
// as 0).
func value(q resource.Quantity, milli bool) int64 {
	hi, lo := maxValue, minValue
	if milli {
		hi, lo = maxMilliValue, minMilliValue
	}
	switch {
	case q.Cmp(hi) >= 0:
		return math.MaxInt64
	case q.Cmp(lo) <= 0:
		return math.MinInt64
	case milli:
		return q.MilliValue()
	}
	return q.Value()
}

// Capacity returns a capacity function for prescheduling.WithCapacity: the
// spare replicas, by [MaxReplicas], that each of clusters has for a workload
// whose replicas each need req (a binding's spec.replicaRequirements). A
// cluster not in clusters is unknown, which the Checker assumes sufficient.
// Only req is read: the per-component requirements of a multi-component
// binding (spec.components) are not, so for one of those the count may show
// more room than there is.
// The summaries are read once, when Capacity is called; the function is safe
// for concurrent use.
func Capacity(clusters []clusterv1alpha1.Cluster, req *workv1alpha2.ReplicaRequirements) func(cluster string) (replicas int32, known bool) {
	return CapacityFrom(SummariesOf(clusters), req)
}

// CapacityFrom is [Capacity] over summaries read when asked, one cluster at
// a time: the check asks only about the clusters the scheduler would
// estimate, so nothing is computed for the rest of the fleet (the engine's
// Fleet.Summary, say). A cluster summaries does not know is unknown.
func CapacityFrom(summaries Summaries, req *workv1alpha2.ReplicaRequirements) func(cluster string) (replicas int32, known bool) {
	return func(cluster string) (int32, bool) {
		s, ok := summaries(cluster)
		if !ok {
			return 0, false
		}
		return MaxReplicas(s, req), true
	}
}

// Summaries gives a cluster's resource summary by name, and whether the
// cluster is known at all: a known cluster may have reported none yet
// (nil). The engine's Fleet.Summary is one; [SummariesOf] makes one from a
// list.
type Summaries func(cluster string) (*clusterv1alpha1.ResourceSummary, bool)

// SummariesOf returns the summaries of clusters, read once, now.
func SummariesOf(clusters []clusterv1alpha1.Cluster) Summaries {
	m := make(map[string]*clusterv1alpha1.ResourceSummary, len(clusters))
	for i := range clusters {
		m[clusters[i].Name] = clusters[i].Status.ResourceSummary
	}
	return func(name string) (*clusterv1alpha1.ResourceSummary, bool) {
		s, ok := m[name]
		return s, ok
	}
}

// AllocatedPods is the pods a cluster's resource summary shows allocated
// and allocating; 0 for a nil summary. A count too large for an int64
// saturates.
func AllocatedPods(summary *clusterv1alpha1.ResourceSummary) int64 {
	if summary == nil {
		return 0
	}
	var n resource.Quantity
	if q, ok := summary.Allocated[corev1.ResourcePods]; ok {
		n.Add(q)
	}
	if q, ok := summary.Allocating[corev1.ResourcePods]; ok {
		n.Add(q)
	}
	return value(n, false)
}
