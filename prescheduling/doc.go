// Package prescheduling answers, before a workload is evicted from a faulty
// cluster, whether it has anywhere to go: the pre-scheduling check of the
// cluster failover proposal, which avoids evictions the scheduler could never
// place.
//
// A [Checker] reads a [Placement] (Karmada's policy/v1alpha1 Placement: its
// JSON decodes into it), the current schedule result, the clusters being
// evicted from and the fleet. Guarantees:
//
//   - Check is pure and safe for concurrent use: it reads its arguments and
//     the capacity function, and nothing else.
//   - Bad input (an invalid placement or request) is an infeasible Result
//     whose Reason names the field and the value; nothing panics.
//   - Reason is a sentence an operator can act on: which clusters were
//     considered, which were ruled out and why.
//   - Selectors are parsed once per Check, not per cluster, and the fleet is
//     read in one pass: a 5,000-cluster fleet takes about a millisecond or
//     less (BenchmarkCheck), some twenty times less than re-parsing the
//     selectors for every cluster. Spread constraints held at once cost
//     little on top: by region and by cluster together, on 5,000 clusters
//     with 2,500 scheduled, some 10-30% more than the plain check
//     (BenchmarkCheckSpread).
//
// A feasible answer is a promise that Karmada v1.18's scheduler can place
// what the eviction removes: some choice of eligible clusters satisfies every
// spread constraint at once, as the scheduler selects (regions, then clusters
// within them), and, with capacities, the clusters it may use have room. It is
// not a scheduling simulation: the scheduler may pick other clusters. Where
// the check cannot tell, it says infeasible only when it is sure, and Reason
// says what it could not check.
package prescheduling
