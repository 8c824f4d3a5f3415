package appfailover

import (
	"fmt"
	"slices"
	"strings"

	"github.com/failoverkit/failover/gracefulevict"
)

// DefaultBadRolloutThreshold is the threshold of [BadRollout] a caller
// uses unless told otherwise: more than half of a workload's clusters.
const DefaultBadRolloutThreshold = 0.5

// BadRollout is the bad-rollout rule: when one workload is unhealthy on
// many of its clusters at once, the fault is the workload's (a bad
// rollout), not the clusters', and failing it over would only carry the
// fault to the next clusters; so every failover of the workload holds,
// until it recovers or an operator confirms that the failures are real.
//
// seen and res are the observations given to [Policy.DecideAll] and its
// answer; inTransit are the clusters an application failover of the
// workload is still leaving (for Karmada, the clusters of its open
// graceful eviction tasks written by an application failover), which
// DecideAll does not see. A cluster counts as unhealthy when its copy is
// seen Unhealthy, when its window has passed (res.FailOver, an Unknown
// copy with UnknownCounts included), or when it is in transit; the
// workload's clusters are those seen and those in transit (a cluster in
// both counts once, as seen). The rule holds when more than threshold of
// the workload's clusters are unhealthy, and at least two: one cluster
// alone is never a rollout.
//
// threshold is a fraction in (0, 1]; 1 or more (or NaN) turns the hold
// off, 0 or less holds whenever two clusters are unhealthy. why says, when
// it holds, on how many of how many clusters, which, and the threshold,
// in words an operator can act on; it is empty otherwise.
func BadRollout(seen map[string]Observation, res Result, inTransit []string, threshold float64) (holds bool, why string) {
	if !(threshold < 1) {
		return false, ""
	}
	var sick []string
	total := len(seen)
	for cluster, o := range seen {
		if o.Health == gracefulevict.Unhealthy || slices.Contains(res.FailOver, cluster) {
			sick = append(sick, cluster)
		}
	}
	for _, cluster := range inTransit {
		if _, ok := seen[cluster]; !ok && !slices.Contains(sick, cluster) {
			sick = append(sick, cluster)
			total++
		}
	}
	if len(sick) < 2 || float64(len(sick)) <= threshold*float64(total) {
		return false, ""
	}
	slices.Sort(sick)
	return true, fmt.Sprintf("the application is unhealthy on %d of its %d clusters (%s), more than the bad-rollout threshold %v: a bad rollout, not a bad cluster",
		len(sick), total, strings.Join(sick, ", "), threshold)
}
