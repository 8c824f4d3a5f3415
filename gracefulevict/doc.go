// Package gracefulevict decides when a graceful eviction task is finished.
//
// When a workload is evicted from a faulty cluster, its copy there is not
// deleted at once: the cluster moves from the binding's schedule result into
// a [Task] (see [Evict]), the scheduler places a replacement, and the old copy
// is removed only when the [Assessor] says the task is done. Guarantees:
//
//   - Assess is pure: it reads a [Binding] and a time and returns which tasks
//     to keep and which are done; it never mutates its input, never reads the
//     wall clock and never loses or duplicates a task: each input task is in
//     exactly one of Keep and Done, both in input order.
//   - A task whose cluster is back in the schedule result is done, so a
//     cluster that recovers before its workload found a new home ends the
//     eviction instead of deadlocking it.
//   - An empty schedule result is never healthy: the old copy is not removed
//     because nothing replaced it.
//   - Every kept task that can time out reports its deadline through
//     Assessment.RequeueAfter, so a caller needs no polling.
package gracefulevict
