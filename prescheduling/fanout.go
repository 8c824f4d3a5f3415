package prescheduling

import (
	"iter"
	"slices"
	"strings"

	"github.com/failoverkit/failover"
)

// Fanout is a move of Replicas to each of Clusters but those in Except:
// where a Duplicated placement without spread constraints adds a copy, on
// every cluster it allows. Clusters is a list an [Index] keeps, which many
// Results share (a reservation.Ledger holds room for all of them at once
// by it): read it, do not modify it. Both lists are sorted by name, and
// Except holds only names of Clusters.
type Fanout struct {
	Clusters []string
	Except   []string
	Replicas int32
}

// Names lists the clusters f moves replicas to, in name order.
func (f *Fanout) Names() iter.Seq[string] {
	return func(yield func(string) bool) {
		k := 0
		for _, name := range f.Clusters {
			if k < len(f.Except) && f.Except[k] == name {
				k++
				continue
			}
			if !yield(name) {
				return
			}
		}
	}
}

// Has reports whether f moves replicas to the cluster name.
func (f *Fanout) Has(name string) bool {
	_, in := slices.BinarySearch(f.Clusters, name)
	if !in {
		return false
	}
	_, out := slices.BinarySearch(f.Except, name)
	return !out
}

// AllMoves lists every move of r, those of Moves and those of Fanout, in
// name order when Moves is.
func (r Result) AllMoves() iter.Seq[failover.TargetCluster] {
	return func(yield func(failover.TargetCluster) bool) {
		if r.Fanout == nil {
			for _, m := range r.Moves {
				if !yield(m) {
					return
				}
			}
			return
		}
		i := 0
		for name := range r.Fanout.Names() {
			for ; i < len(r.Moves) && strings.Compare(r.Moves[i].Name, name) < 0; i++ {
				if !yield(r.Moves[i]) {
					return
				}
			}
			if !yield(failover.TargetCluster{Name: name, Replicas: r.Fanout.Replicas}) {
				return
			}
		}
		for _, m := range r.Moves[i:] {
			if !yield(m) {
				return
			}
		}
	}
}
