package prescheduling

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/failoverkit/failover"
)

// spreadKey is a spread constraint ready to group clusters.
type spreadKey struct {
	field    SpreadFieldValue // empty when label is set
	label    string
	min, max int
	index    int // position in placement.spreadConstraints
}

func newSpreadKey(sc SpreadConstraint, path string) (spreadKey, error) {
	if sc.SpreadByLabel != "" {
		if sc.SpreadByField != "" {
			return spreadKey{}, fmt.Errorf("prescheduling: placement.%s: spreadByField %q and spreadByLabel %q cannot both be set", path, sc.SpreadByField, sc.SpreadByLabel)
		}
		if msgs := validation.IsQualifiedName(sc.SpreadByLabel); len(msgs) > 0 {
			return spreadKey{}, fmt.Errorf("prescheduling: placement.%s.spreadByLabel: %q: %s", path, sc.SpreadByLabel, strings.Join(msgs, "; "))
		}
		return spreadKey{label: sc.SpreadByLabel}, nil
	}
	switch sc.SpreadByField {
	case "":
		return spreadKey{field: SpreadByFieldCluster}, nil
	case SpreadByFieldCluster, SpreadByFieldRegion, SpreadByFieldZone, SpreadByFieldProvider:
		return spreadKey{field: sc.SpreadByField}, nil
	}
	return spreadKey{}, fmt.Errorf("prescheduling: placement.%s.spreadByField: unknown value %q: want cluster, region, zone or provider", path, sc.SpreadByField)
}

// of returns the group of c; empty when c has none (no such field or label)
// or, by zone, when c spans several zones (see zonesOf).
func (k *spreadKey) of(c *failover.Cluster) string {
	switch k.field {
	case SpreadByFieldCluster:
		return c.Name
	case SpreadByFieldRegion:
		return c.Region
	case SpreadByFieldZone:
		switch len(c.Zones) {
		case 0:
			return c.Zone
		case 1:
			return c.Zones[0]
		}
		return ""
	case SpreadByFieldProvider:
		return c.Provider
	}
	return c.Labels[k.label]
}

// has reports whether c can be put in a group of k: Karmada's spread
// constraint filter rules out a cluster without the field.
func (k *spreadKey) has(c *failover.Cluster) bool {
	if k.field == SpreadByFieldZone && len(c.Zones) > 1 {
		return true
	}
	return k.of(c) != ""
}

// zonesOf returns the zones of c as Karmada's scheduler groups them: every
// zone in Zones, else Zone.
func zonesOf(c *failover.Cluster) []string {
	if len(c.Zones) > 0 {
		return c.Zones
	}
	if c.Zone != "" {
		return []string{c.Zone}
	}
	return nil
}

// noun names n groups in a Reason: "1 region", "3 values of label team".
func (k *spreadKey) noun(n int) string {
	switch {
	case k.field == "" && n == 1:
		return "1 value of label " + k.label
	case k.field == "":
		return fmt.Sprintf("%d values of label %s", n, k.label)
	case n == 1:
		return "1 " + string(k.field)
	}
	return fmt.Sprintf("%d %ss", n, k.field)
}

// one names a single group: "one region", "one value of label team".
func (k *spreadKey) one() string {
	if k.field == "" {
		return "one value of label " + k.label
	}
	return "one " + string(k.field)
}

// bound is the range of group counts the spread constraints of one kind of
// group allow together: the largest minGroups and the smallest maxGroups
// among them.
type bound struct {
	min, max     int // max 0: no maximum
	minAt, maxAt int // the constraint that sets each, for a Reason; -1: none
}

func newBound() bound { return bound{minAt: -1, maxAt: -1} }

func (b *bound) merge(k *spreadKey) {
	if k.min > b.min {
		b.min, b.minAt = k.min, k.index
	}
	if k.max > 0 && (b.max == 0 || k.max < b.max) {
		b.max, b.maxAt = k.max, k.index
	}
}

// spreadPlan is a placement's spread constraints as the scheduler applies
// them: the bound on the number of clusters, and the bound on the groups of
// each other kind (region, zone, provider, a label), each kind once.
type spreadPlan struct {
	// ignored is set when Karmada's scheduler ignores the spread constraints:
	// a Divided placement weighted by a static weight list
	// (shouldIgnoreSpreadConstraint in pkg/scheduler/core/spreadconstraint).
	ignored  bool
	clusters bound
	kinds    []kindBound
}

type kindBound struct {
	key spreadKey // the grouping; its min and max are those of one constraint
	bound
}

// newSpreadPlan merges keys by kind and reports a minimum of one constraint
// that a maximum of another of the same kind makes impossible.
func newSpreadPlan(keys []spreadKey, ignored bool) (spreadPlan, error) {
	p := spreadPlan{ignored: ignored, clusters: newBound()}
	for i := range keys {
		k := &keys[i]
		b := &p.clusters
		if k.field != SpreadByFieldCluster {
			j := slices.IndexFunc(p.kinds, func(kb kindBound) bool { return kb.key.field == k.field && kb.key.label == k.label })
			if j < 0 {
				p.kinds = append(p.kinds, kindBound{key: *k, bound: newBound()})
				j = len(p.kinds) - 1
			}
			b = &p.kinds[j].bound
		}
		b.merge(k)
	}
	check := func(b *bound, k *spreadKey) error {
		if b.max > 0 && b.min > b.max && b.minAt != b.maxAt {
			return fmt.Errorf("prescheduling: placement.spreadConstraints[%d].minGroups %d and spreadConstraints[%d].maxGroups %d, both by %s, cannot both hold",
				b.minAt, b.min, b.maxAt, b.max, k.singular())
		}
		return nil
	}
	if err := check(&p.clusters, &spreadKey{field: SpreadByFieldCluster}); err != nil {
		return p, err
	}
	for i := range p.kinds {
		if err := check(&p.kinds[i].bound, &p.kinds[i].key); err != nil {
			return p, err
		}
	}
	return p, nil
}

// spreadCase is what a spread check decides on: the clusters that keep the
// workload and the eligible clusters that may be added.
type spreadCase struct {
	// remaining keep the workload; remainingClusters are their fleet entries
	// (nil when the fleet does not list one: it then counts as a cluster but
	// as no other group).
	remaining         []string
	remainingClusters []*failover.Cluster
	// fresh are the eligible clusters that do not run the workload.
	fresh []*failover.Cluster
	// need is how many of fresh must be added at least.
	need int
}

// verdict is the outcome of a spread check.
type verdict struct {
	ok bool
	// reason says why not, when !ok.
	reason string
	// note says what could not be checked, when ok.
	note string
	// room is the most fresh clusters the cluster bound lets the schedule
	// add; math.MaxInt when it sets no maximum.
	room int
}

// check decides whether some choice of fresh clusters, at least need of
// them, makes every bound hold at once, counted over the remaining clusters
// plus the choice. It is exact for the number of clusters together with one
// other kind of group (region, zone, provider or a label), the way Karmada's
// scheduler selects (regions first, then clusters within them). With more
// kinds it checks each kind together with the number of clusters and says so
// in the note; a kind of group over clusters that span several zones is
// checked by bounds and a greedy choice, and the note says when neither
// decided.
func (p *spreadPlan) check(sc *spreadCase) verdict {
	rN := len(sc.remaining)
	v := verdict{ok: true, room: math.MaxInt}
	if p.ignored {
		return v
	}
	c := &p.clusters
	if c.max > 0 {
		v.room = c.max - rN
	}
	base := max(sc.need, c.min-rN) // fresh clusters the choice needs at least
	switch {
	case v.room < sc.need && v.room < 0:
		return verdict{reason: fmt.Sprintf("spreadConstraints[%d] allows at most %s, but the workload already runs on %d (%s)",
			c.maxAt, plural(c.max, "cluster", "clusters"), rN, list(sc.remaining, 5))}
	case v.room < sc.need:
		return verdict{reason: fmt.Sprintf("spreadConstraints[%d] allows at most %s, but the workload keeps %d (%s) and needs %d more",
			c.maxAt, plural(c.max, "cluster", "clusters"), rN, list(sc.remaining, 5), sc.need)}
	case len(sc.fresh) < base:
		return verdict{reason: fmt.Sprintf("spreadConstraints[%d] needs at least %s, but the remaining and eligible clusters span only %s",
			c.minAt, plural(c.min, "cluster", "clusters"), plural(rN+len(sc.fresh), "cluster", "clusters"))}
	}
	var notes []string
	for i := range p.kinds {
		kb := &p.kinds[i]
		var ok bool
		var why string
		if multiZone(&kb.key, sc) {
			var sure bool
			ok, sure, why = p.checkZones(kb, sc, base, v.room)
			if !ok && !sure {
				ok = true
				notes = append(notes, fmt.Sprintf("the library could not check spreadConstraints[%d] exactly: clusters span several zones", kb.anyAt()))
			}
		} else {
			ok, why = p.checkKind(kb, sc, base, v.room)
		}
		if !ok {
			return verdict{reason: why}
		}
	}
	if len(p.kinds) > 1 {
		var at []string
		for i := range p.kinds {
			at = append(at, p.kinds[i].key.singular())
		}
		notes = append(notes, fmt.Sprintf("the library checked the spread by %s each with the number of clusters but could not check them all at once; Karmada's scheduler selects by region and cluster only", joinAnd(at)))
	}
	v.note = strings.Join(notes, "; ")
	return v
}

func (kb *kindBound) anyAt() int {
	if kb.minAt >= 0 {
		return kb.minAt
	}
	if kb.maxAt >= 0 {
		return kb.maxAt
	}
	return kb.key.index
}

// checkKind decides one kind of group whose clusters are each in one group.
// Adding fresh clusters opens some new groups, each with at least one of
// its clusters; with k new groups the choice can have from max(k, base) up to
// (fresh clusters in groups it already runs in) + (fresh clusters of the k
// largest new groups) clusters, capped by room. Some k in the allowed range
// must leave that interval non-empty.
func (p *spreadPlan) checkKind(kb *kindBound, sc *spreadCase, base, room int) (bool, string) {
	k := &kb.key
	// Clusters per group: groups the workload runs in, and new ones.
	have, fresh := map[string]int{}, map[string]int{}
	for _, c := range sc.remainingClusters {
		if c != nil {
			if g := k.of(c); g != "" {
				have[g]++
			}
		}
	}
	covered := 0
	for _, c := range sc.fresh {
		g := k.of(c)
		if _, ok := have[g]; ok {
			covered++
		} else {
			fresh[g]++
		}
	}
	h, f := len(have), len(fresh)
	if kb.max > 0 && h > kb.max {
		return false, fmt.Sprintf("spreadConstraints[%d] allows at most %s, but the workload already runs in %d (%s)",
			kb.maxAt, k.noun(kb.max), h, list(slices.Sorted(maps.Keys(have)), 5))
	}
	if h+f < kb.min {
		return false, fmt.Sprintf("spreadConstraints[%d] needs at least %s, but the remaining and eligible clusters span only %s",
			kb.minAt, k.noun(kb.min), k.noun(h+f))
	}
	klo, khi := max(0, kb.min-h), f
	if kb.max > 0 {
		khi = min(f, kb.max-h)
	}
	sizes := slices.Collect(maps.Values(fresh))
	slices.SortFunc(sizes, func(a, b int) int { return b - a })
	// top[i] is the number of fresh clusters in the i largest new groups.
	top := make([]int, len(sizes)+1)
	for i, n := range sizes {
		top[i+1] = top[i] + n
	}
	for n := klo; n <= khi; n++ {
		if max(n, base) <= min(covered+top[n], room) {
			return true, ""
		}
	}
	c := &p.clusters
	if room < klo {
		return false, fmt.Sprintf("spreadConstraints[%d] needs at least %s, which takes at least %d more clusters, but spreadConstraints[%d] allows at most %s and the workload keeps %d",
			kb.minAt, k.noun(kb.min), klo, c.maxAt, plural(c.max, "cluster", "clusters"), len(sc.remaining))
	}
	// Too few clusters within the most groups allowed (khi < f here, or
	// the count check in check would have failed).
	where := ""
	if h > 0 {
		where = fmt.Sprintf(" (the workload already runs in %s)", list(slices.Sorted(maps.Keys(have)), 5))
	}
	best := len(sc.remaining) + covered + top[khi]
	total := len(sc.remaining) + base
	if c.min-len(sc.remaining) >= sc.need && c.minAt >= 0 {
		in := k.one()
		bestIs := fmt.Sprintf("the best %s has %d", strings.TrimPrefix(in, "one "), best)
		if kb.max > 1 {
			in = "at most " + k.noun(kb.max)
			bestIs = fmt.Sprintf("the best %s have %d", k.noun(kb.max), best)
		}
		return false, fmt.Sprintf("spreadConstraints[%d] (at most %s) with spreadConstraints[%d] (at least %s) needs %d clusters in %s; %s%s",
			kb.maxAt, k.noun(kb.max), c.minAt, plural(c.min, "cluster", "clusters"), total, in, bestIs, where)
	}
	lo := h
	for n := 0; n <= f && covered+top[n] < base; n++ {
		lo = h + n + 1
	}
	return false, fmt.Sprintf("spreadConstraints[%d] allows at most %s, but the eligible clusters would make it %d%s",
		kb.maxAt, k.noun(kb.max), lo, where)
}

// multiZone reports whether k groups by zone and some cluster of sc spans
// several zones.
func multiZone(k *spreadKey, sc *spreadCase) bool {
	if k.field != SpreadByFieldZone {
		return false
	}
	for _, c := range sc.remainingClusters {
		if c != nil && len(c.Zones) > 1 {
			return true
		}
	}
	for _, c := range sc.fresh {
		if len(c.Zones) > 1 {
			return true
		}
	}
	return false
}

// checkZones decides a zone bound when clusters span several zones, where a
// cluster counts in each of its zones (as Karmada's scheduler groups them).
// Choosing clusters to cover at least or at most some number of zones is a
// covering problem; it answers ok when a greedy choice meets every bound, not
// ok and sure when a bound cannot be met by any choice, and not ok and not
// sure otherwise.
func (p *spreadPlan) checkZones(kb *kindBound, sc *spreadCase, base, room int) (ok, sure bool, why string) {
	k := &kb.key
	have := map[string]bool{}
	for _, c := range sc.remainingClusters {
		if c != nil {
			for _, z := range zonesOf(c) {
				have[z] = true
			}
		}
	}
	if kb.max > 0 && len(have) > kb.max {
		return false, true, fmt.Sprintf("spreadConstraints[%d] allows at most %s, but the workload already runs in %d", kb.maxAt, k.noun(kb.max), len(have))
	}
	// A cluster that alone would take the schedule past the maximum can
	// never be chosen.
	all := maps.Clone(have)
	free := 0 // fresh clusters that add no zone
	var usable []*failover.Cluster
	for _, c := range sc.fresh {
		adds := newZones(have, zonesOf(c))
		if kb.max > 0 && len(have)+adds > kb.max {
			continue
		}
		usable = append(usable, c)
		for _, z := range zonesOf(c) {
			all[z] = true
		}
		if adds == 0 {
			free++
		}
	}
	if len(usable) < base {
		return false, true, fmt.Sprintf("spreadConstraints[%d] allows at most %s, and only %d eligible clusters fit within it, fewer than the %d needed",
			kb.maxAt, k.noun(kb.max), len(usable), base)
	}
	if len(all) < kb.min {
		return false, true, fmt.Sprintf("spreadConstraints[%d] needs at least %s, but the remaining and eligible clusters span only %s", kb.minAt, k.noun(kb.min), k.noun(len(all)))
	}
	if kb.max > 0 && len(have) == kb.max && free < base {
		return false, true, fmt.Sprintf("spreadConstraints[%d] allows at most %s, the workload already runs in %d, and only %d eligible clusters add no zone", kb.maxAt, k.noun(kb.max), kb.max, free)
	}
	cur := maps.Clone(have)
	used := make([]bool, len(usable))
	added := 0
	gain := func(c *failover.Cluster) int { return newZones(cur, zonesOf(c)) }
	take := func(i int) {
		used[i] = true
		added++
		for _, z := range zonesOf(usable[i]) {
			cur[z] = true
		}
	}
	fits := func(g int) bool { return kb.max == 0 || len(cur)+g <= kb.max }
	// First reach the minimum of zones with the clusters that add most,
	for len(cur) < kb.min && added < room {
		best, bestGain := -1, 0
		for i, c := range usable {
			if g := gain(c); !used[i] && g > bestGain && fits(g) {
				best, bestGain = i, g
			}
		}
		if best < 0 {
			break
		}
		take(best)
	}
	// then the number of clusters with those that add least: every one that
	// adds no zone, then the one that adds fewest, and again (each round adds
	// a zone, so there are few rounds).
	for added < base {
		best, bestGain := -1, math.MaxInt
		for i, c := range usable {
			if used[i] || added >= base {
				continue
			}
			switch g := gain(c); {
			case g == 0:
				take(i)
			case g < bestGain && fits(g):
				best, bestGain = i, g
			}
		}
		if added >= base || best < 0 {
			break
		}
		take(best)
	}
	if len(cur) >= kb.min && added >= base && added <= room {
		return true, true, ""
	}
	return false, false, ""
}

// newZones counts the zones of zones not in have, each once (a cluster may
// list a zone twice).
func newZones(have map[string]bool, zones []string) int {
	n := 0
	for i, z := range zones {
		if !have[z] && !slices.Contains(zones[:i], z) {
			n++
		}
	}
	return n
}
