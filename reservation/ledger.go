package reservation

import (
	"container/heap"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/failoverkit/failover"
	"github.com/failoverkit/failover/prescheduling"
)

// DefaultHold is how long a [Ledger] holds room for an approved eviction at
// most: Karmada's scheduler keeps its own assumptions of in-flight workloads
// (SchedulingOvercommitProtection) as long.
const DefaultHold = 5 * time.Minute

// Ledger holds room for the evictions a check approved until the clusters
// show their replicas placed, the caller releases it ([Ledger.Release],
// [Ledger.ReleaseAt]), or a hold passes ([WithHold], default
// [DefaultHold]). It reads the clusters through [Rooms], which the caller
// builds from its own record of their room, so that any controller that
// runs the check can use it; the karmada module's engine.Ledger is this
// Ledger over Karmada's resource summaries.
//
// What a cluster reports of its room lags behind the scheduler, so checks
// run one after another all see the same room, and so does the scheduler:
// Karmada issue 6518 has 15 one-replica workloads failed over from one
// cluster all placed on a survivor with room for 10, while another with
// room for 5 stays empty. The check predicts where the scheduler puts what
// an eviction removes ([prescheduling.Result.Moves]); [Ledger.Admit] then
// holds an eviction back, with Code [prescheduling.AwaitingCapacity], when
// the room those clusters have left after the evictions in flight is
// short, and otherwise records the moves against that room. Against
// unchanged reports, a run of admissions approves at most what the
// clusters the scheduler picks can take; the rest wait until the reports
// catch up, when the scheduler (and the check) pick other clusters. A
// cluster nothing is held on is left to the check: the Ledger holds back
// only for room taken by evictions in flight. Only evictions the scheduler
// places by room are held back ([prescheduling.Result.PlacedByRoom]): a
// Duplicated or static weight placement lands on the same clusters
// whatever their room, so waiting would only delay it; its moves are held
// all the same, as they take room from the evictions placed by it.
//
// The room held is the moves' replicas and their resource requests, which
// [Rooms.Fit] deducts from a cluster's room as Karmada's own scheduler
// deducts its in-flight assumptions (deductAssumedWorkloadsFromSummary).
// What is held is summed per cluster as holds change, and lapsed holds are
// looked for only once one may have lapsed, so that an Admit costs the
// same with 10,000 evictions in flight as with 10, and on 1,000 clusters
// held as on one (BenchmarkLedgerAdmit). A cluster shows replicas placed
// when its pods ([Rooms.Pods]) have grown by them since the room was held,
// oldest first, as read by the Admit or Restore whose moves name it
// ([Ledger.Settle] reads every one); pods of other workloads
// starting there at the same time count too, and so may release room
// early, never beyond the hold. When its pods fall (other workloads
// leaving), growth is counted from the lower number.
//
// A [prescheduling.Fanout] (a Duplicated placement without spread
// constraints puts a copy on every cluster it allows, a thousand for a
// region-wide one) is held once, over the list of clusters the Index shares
// between its answers, so that its Admit costs what one move's does. Its
// room is not given back as those clusters' pods grow, which would take a
// read of each at every admission: it stays held, conservatively, until the
// caller releases it (when the eviction's task ends, at the clusters' next
// report) or the hold ends.
//
// A Ledger is safe for concurrent use, and reads no clock: every method that
// depends on time takes now. Its zero value is not usable; use [NewLedger].
type Ledger struct {
	hold time.Duration

	mu       sync.Mutex
	byKey    map[string]*holding
	clusters map[string]*book
	// fans are the holds of fan-outs (prescheduling.Fanout), by the list
	// of clusters they share.
	fans map[fanKey]*fan
	// due is no later than the first until of byKey: before it, no hold
	// has run out, and expire looks at none. Zero: none held.
	due time.Time
}

// Rooms is what a [Ledger] reads of the clusters, as they are at the call
// it is given to, for the workload that call is about: for Karmada, the
// clusters' resource summaries and the workload's replica requirements.
// Its methods are called with the Ledger's lock held, and must not call
// the Ledger.
type Rooms interface {
	// Pods returns the pods running and starting on cluster now (for
	// Karmada, allocated and allocating), and whether the cluster is
	// known now: nothing held on one that is not is settled.
	Pods(cluster string) (pods int64, known bool)
	// Fit returns how many replicas of the workload cluster can take once
	// replicas more replicas, requesting requests in all, are held there:
	// its room as the check sees it, less what evictions in flight will
	// take. A cluster not known has room for none. requests belongs to
	// the Ledger: Fit reads it and keeps nothing of it.
	Fit(cluster string, replicas int64, requests corev1.ResourceList) int32
}

// holding is the room held for one approved eviction.
type holding struct {
	key string
	// until is when the hold ends; a change to it fixes the heaps of its
	// places (byUntil).
	until time.Time
	// at is what is held on each cluster, by name; requests, what one
	// replica requests.
	at       map[string]*place
	requests requests
	// fan, when not nil, holds fanReplicas more on every cluster of fan's
	// list but fanExcept: the moves of a prescheduling.Fanout.
	fan         *fan
	fanReplicas int64
	fanExcept   []string
}

// fanKey names the list of clusters a fan-out holds room on: the list
// itself, which an Index shares between the Fanouts of its answers and
// never changes once it has handed it out.
type fanKey struct {
	first *string
	n     int
}

// fan is what the holdings of fan-outs over one list of clusters hold: on
// every cluster of the list, replicas and their requests, but for those
// except holds back on the clusters it names. A Duplicated placement
// without spread constraints puts a copy on every cluster it allows, a
// thousand in a region-wide one: held this way, such an eviction costs the
// same as one that moves replicas to one cluster.
type fan struct {
	key      fanKey
	clusters []string
	replicas int64
	requests requests
	except   map[string]*held
	holdings map[*holding]struct{}
}

// held is some replicas and their requests.
type held struct {
	replicas int64
	requests requests
}

// has reports whether f's list holds the cluster name.
func (f *fan) has(name string) bool {
	_, ok := slices.BinarySearch(f.clusters, name)
	return ok
}

// on returns what f holds on the cluster name, one of its list.
func (f *fan) on(name string) (int64, requests) {
	rs := slices.Clone(f.requests)
	n := f.replicas
	if e := f.except[name]; e != nil {
		n -= e.replicas
		for _, r := range e.requests {
			rs = rs.add(requests{r}, -1)
		}
	}
	return n, rs
}

// add counts h's fan-out in f (remove: out of it).
func (f *fan) add(h *holding, remove bool) {
	n := h.fanReplicas
	if remove {
		n = -n
	}
	f.replicas += n
	f.requests = f.requests.add(h.requests, n)
	for _, name := range h.fanExcept {
		e := f.except[name]
		if e == nil {
			e = &held{}
			f.except[name] = e
		}
		e.replicas += n
		e.requests = e.requests.add(h.requests, n)
		if e.replicas == 0 {
			delete(f.except, name)
		}
	}
	if remove {
		delete(f.holdings, h)
	} else {
		f.holdings[h] = struct{}{}
	}
}

// holds reports whether h's fan-out holds room on the cluster name.
func (h *holding) holds(name string) bool {
	if h.fan == nil || !h.fan.has(name) {
		return false
	}
	_, except := slices.BinarySearch(h.fanExcept, name)
	return !except
}

// requests are resource requests in milli-units, summed in int64: a
// Quantity's arithmetic costs more than the rest of an Admit.
type requests []request

type request struct {
	name  corev1.ResourceName
	milli int64
}

// requestsOf is list in milli-units, by name.
func requestsOf(list corev1.ResourceList) requests {
	out := make(requests, 0, len(list))
	for name, q := range list {
		out = append(out, request{name, q.MilliValue()})
	}
	slices.SortFunc(out, func(a, b request) int { return strings.Compare(string(a.name), string(b.name)) })
	return out
}

// add adds n times each of more to rs, each resource once.
func (rs requests) add(more requests, n int64) requests {
	for _, m := range more {
		i := slices.IndexFunc(rs, func(r request) bool { return r.name == m.name })
		if i < 0 {
			rs = append(rs, request{m.name, 0})
			i = len(rs) - 1
		}
		rs[i].milli += n * m.milli
	}
	return rs
}

// list is rs as a ResourceList, for Rooms.Fit.
func (rs requests) list() corev1.ResourceList {
	if len(rs) == 0 {
		return nil
	}
	out := make(corev1.ResourceList, len(rs))
	for _, r := range rs {
		out[r.name] = *resource.NewMilliQuantity(r.milli, resource.DecimalSI)
	}
	return out
}

// place is the replicas one holding holds on one cluster, linked in the
// order of that cluster's book, so that a holding leaves it in one step
// whatever the number of evictions in flight there.
type place struct {
	h          *holding
	replicas   int64
	prev, next *place
	// index is the place's position in its book's byUntil.
	index int
}

// book is what is held on one cluster.
type book struct {
	// pods is the cluster's pods when the pods held there now were held:
	// growth beyond it shows them placed.
	pods int64
	// first and last are the places held on the cluster, oldest first.
	first, last *place
	// byUntil are the same places as a heap by when their hold ends, so
	// that an Admit held back finds the first to end in one step whatever
	// the number of evictions in flight.
	byUntil untilHeap
	// replicas and requests are what the places hold on the cluster in all:
	// the replicas, and their resource requests summed, so that the room
	// left is read in one step whatever the number of evictions in
	// flight.
	replicas int64
	requests requests
}

// LedgerOption configures a [Ledger]. It returns an error for a value it
// cannot take, which [NewLedger] reports.
type LedgerOption func(*Ledger) error

// WithHold sets how long room is held for an approved eviction at most. It
// must be positive.
func WithHold(d time.Duration) LedgerOption {
	return func(l *Ledger) error {
		if d <= 0 {
			return fmt.Errorf("reservation: WithHold: %v: must be positive", d)
		}
		l.hold = d
		return nil
	}
}

// Hold returns how long room is held for an approved eviction at most
// (WithHold).
func (l *Ledger) Hold() time.Duration { return l.hold }

// NewLedger returns an empty Ledger configured by opts; an option given a
// value it cannot take is an error naming it. Nil options are skipped.
func NewLedger(opts ...LedgerOption) (*Ledger, error) {
	l := &Ledger{hold: DefaultHold, byKey: map[string]*holding{}, clusters: map[string]*book{}, fans: map[fanKey]*fan{}}
	var errs []error
	for _, o := range opts {
		if o != nil {
			errs = append(errs, o(l))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return l, nil
}

// errNoRooms is what Admit and Restore answer without a Rooms to read.
var errNoRooms = errors.New("reservation: Ledger: rooms: nil: the clusters' room is needed")

// Admit decides, at now, whether the eviction key that the check answered
// r may go ahead, given the room the evictions in flight will take. key
// names the eviction: the workload's key, as an eviction queue names it,
// and, where one workload may leave several clusters at once, the cluster.
// rooms reads the clusters as they are now, for this workload; requests is
// what one of its replicas requests (nil: nothing but a pod), copied.
//
// An infeasible r comes back as it is. A feasible r whose moves fit in the
// room left on each cluster they go to comes back as it is, and the room is
// held for key (replacing what was held for it before). Otherwise the answer
// is infeasible with Code [prescheduling.AwaitingCapacity], a Reason naming
// the clusters short of room, and RetryAfter, when the hold of the first
// eviction in the way passes: the eviction should be tried again, not
// abandoned, and sooner than that, since the room frees as soon as the
// clusters show the replicas in flight placed, which only a later Admit
// sees. In an eviction queue's handler, return
// evictionqueue.RetryAfter(min(RetryAfter, how often the clusters report
// their room), err) for it and evictionqueue.Abandon for the other
// infeasible codes; call Release when the eviction then fails. A
// feasible r with nil rooms is infeasible with Code
// [prescheduling.InvalidRequest].
func (l *Ledger) Admit(now time.Time, key string, r prescheduling.Result, rooms Rooms, requests corev1.ResourceList) prescheduling.Result {
	if !r.Feasible {
		return r
	}
	if rooms == nil {
		return prescheduling.Result{Code: prescheduling.InvalidRequest, Reason: errNoRooms.Error(), Err: errNoRooms}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.settle(now, rooms, r.Moves)

	var short []string
	var retry time.Time
	moves := r.Moves
	if !r.PlacedByRoom {
		moves = nil // they land there whatever the room
	}
	own := l.byKey[key]
	for _, m := range moves {
		held, heldRequests := l.heldExcept(own, m.Name)
		if held == 0 {
			continue // nothing in flight there: the check has judged it
		}
		room := rooms.Fit(m.Name, held, heldRequests.list())
		if int64(m.Replicas) <= int64(room) {
			continue
		}
		evictions, first := l.othersThan(own, m.Name)
		if retry.IsZero() || first.Before(retry) {
			retry = first
		}
		word := "evictions"
		if evictions == 1 {
			word = "an eviction"
		}
		short = append(short, fmt.Sprintf("%s has room for %d of %d after the %d replicas of %s in flight",
			m.Name, room, m.Replicas, held, word))
	}
	if len(short) > 0 {
		out := r
		out.Feasible, out.Code, out.Moves = false, prescheduling.AwaitingCapacity, nil
		out.Reason = "waiting for room: " + strings.Join(short, "; ")
		out.RetryAfter = max(retry.Sub(now), 0)
		return out
	}
	l.record(key, r, rooms, requests, now.Add(l.hold))
	return r
}

// Restore holds the room of r's moves for key as Admit would have at since,
// without asking whether they fit: for an eviction approved before this
// Ledger existed (a predecessor's, found as an open graceful eviction task,
// created at since, when a controller starts or a new leader is elected).
// The hold ends when it would have; one that has ended by now, or an
// infeasible r, holds nothing. Like Admit it replaces what was held for
// key; rooms and requests are as for Admit, and nil rooms is an error.
func (l *Ledger) Restore(now time.Time, key string, r prescheduling.Result, rooms Rooms, requests corev1.ResourceList, since time.Time) error {
	until := since.Add(l.hold)
	if !r.Feasible || !until.After(now) {
		return nil
	}
	if rooms == nil {
		return errNoRooms
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.settle(now, rooms, r.Moves)
	l.record(key, r, rooms, requests, until)
	return nil
}

// Keys lists the keys room is held for at now, in no order: for a caller
// that releases by its own grouping (every cluster of a workload that was
// deleted, say).
func (l *Ledger) Keys(now time.Time) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.expire(now)
	return slices.Collect(maps.Keys(l.byKey))
}

// Release gives back the room held for key: its eviction failed, or its
// replicas run where they went and the clusters' reports show them.
// Releasing a key nothing is held for does nothing.
func (l *Ledger) Release(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.remove(key)
}

// ReleaseAt gives back the room held for key at at, if the hold would not
// end sooner: for an eviction whose replicas run where they went, at the
// clusters' next report. The reports may not show them yet; released at
// once, their room would be counted again by the evictions checked
// meanwhile. ReleaseAt of a key nothing is held for does nothing.
func (l *Ledger) ReleaseAt(key string, at time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if h := l.byKey[key]; h != nil && at.Before(h.until) {
		h.until = at
		l.dueBy(at)
		for name, p := range h.at {
			heap.Fix(&l.clusters[name].byUntil, p.index)
		}
	}
}

// Held returns the replicas held on each cluster at now, by name: for a
// metric, or a test.
func (l *Ledger) Held(now time.Time) map[string]int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.expire(now)
	out := map[string]int64{}
	for name, b := range l.clusters {
		out[name] = b.replicas
	}
	for _, f := range l.fans {
		for _, name := range f.clusters {
			if n, _ := f.on(name); n > 0 {
				out[name] += n
			}
		}
	}
	return out
}

// record holds r's moves for key until until, replacing what was held for
// it.
func (l *Ledger) record(key string, r prescheduling.Result, rooms Rooms, requests corev1.ResourceList, until time.Time) {
	l.remove(key)
	h := &holding{key: key, until: until, at: make(map[string]*place, len(r.Moves)), requests: requestsOf(requests)}
	for _, m := range r.Moves {
		if m.Replicas <= 0 {
			continue
		}
		b := l.clusters[m.Name]
		if b == nil {
			pods, _ := rooms.Pods(m.Name)
			b = &book{pods: pods}
			l.clusters[m.Name] = b
		}
		p := h.at[m.Name]
		if p == nil {
			p = &place{h: h}
			h.at[m.Name] = p
			b.push(p)
		}
		p.replicas += int64(m.Replicas)
		b.add(h, int64(m.Replicas))
	}
	if fo := r.Fanout; fo != nil && fo.Replicas > 0 && len(fo.Except) < len(fo.Clusters) {
		k := fanKey{first: &fo.Clusters[0], n: len(fo.Clusters)}
		f := l.fans[k]
		if f == nil {
			f = &fan{key: k, clusters: fo.Clusters, except: map[string]*held{}, holdings: map[*holding]struct{}{}}
			l.fans[k] = f
		}
		h.fan, h.fanReplicas, h.fanExcept = f, int64(fo.Replicas), slices.Clone(fo.Except)
		f.add(h, false)
	}
	if len(h.at) > 0 || h.fan != nil {
		l.byKey[key] = h
		l.dueBy(until)
	}
}

// dueBy makes expire look again at t at the latest.
func (l *Ledger) dueBy(t time.Time) {
	if l.due.IsZero() || t.Before(l.due) {
		l.due = t
	}
}

// Settle drops the holds that have run out by now and, on every cluster
// room is held on, the replicas rooms shows placed there. Admit and Restore
// settle the clusters they read, and no decision reads any other, so a
// caller need not call it: it is for one that reads Held, whose clusters
// are otherwise as they were when an Admit or Restore last read them. It
// costs a step per cluster room is held on. Nil rooms settles nothing
// but the holds that have run out.
func (l *Ledger) Settle(now time.Time, rooms Rooms) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.expire(now)
	if rooms == nil {
		return
	}
	for _, name := range slices.Sorted(maps.Keys(l.clusters)) {
		l.settleOne(name, rooms)
	}
}

// settle drops the holds that have run out by now, and, on the clusters
// moves name, the replicas their pods show placed. It looks only at the
// clusters an answer reads or holds room on, so that an Admit costs the
// same however many clusters room is held on.
func (l *Ledger) settle(now time.Time, rooms Rooms, moves []failover.TargetCluster) {
	l.expire(now)
	for _, m := range moves {
		l.settleOne(m.Name, rooms)
	}
}

// settleOne settles the cluster name: the replicas its pods show placed
// since room was held there, oldest first.
func (l *Ledger) settleOne(name string, rooms Rooms) {
	b := l.clusters[name]
	if b == nil {
		return
	}
	pods, ok := rooms.Pods(name)
	if !ok {
		return // not known now: nothing to tell
	}
	if pods < b.pods {
		// Pods ended there (other workloads left): what is held has
		// not shown yet. Growth from here on shows it; kept at the old
		// count, the baseline would hide every placement until the
		// pods grew back.
		b.pods = pods
	}
	grown := pods - b.pods
	for b.first != nil && grown > 0 {
		p := b.first
		n := min(p.replicas, grown)
		p.replicas -= n
		b.add(p.h, -n)
		grown -= n
		b.pods += n
		if p.replicas == 0 {
			delete(p.h.at, name)
			b.unlink(p)
			if len(p.h.at) == 0 && p.h.fan == nil {
				delete(l.byKey, p.h.key)
			}
		}
	}
	if b.first == nil {
		delete(l.clusters, name)
	}
}

// expire drops the holds that have run out by now. It looks at them only
// once the first may have: each Admit would otherwise cost as many steps as
// there are evictions in flight.
func (l *Ledger) expire(now time.Time) {
	if l.due.IsZero() || now.Before(l.due) {
		return
	}
	l.due = time.Time{}
	for key, h := range l.byKey {
		if !now.Before(h.until) {
			l.remove(key)
		} else {
			l.dueBy(h.until)
		}
	}
}

func (l *Ledger) remove(key string) {
	h := l.byKey[key]
	if h == nil {
		return
	}
	delete(l.byKey, key)
	for name, p := range h.at {
		b := l.clusters[name]
		b.add(h, -p.replicas)
		b.unlink(p)
		if b.first == nil {
			delete(l.clusters, name)
		}
	}
	if f := h.fan; f != nil {
		f.add(h, true)
		if len(f.holdings) == 0 {
			delete(l.fans, f.key)
		}
	}
}

// push puts p last in b's order.
func (b *book) push(p *place) {
	p.prev, p.next = b.last, nil
	if b.last != nil {
		b.last.next = p
	} else {
		b.first = p
	}
	b.last = p
	heap.Push(&b.byUntil, p)
}

// unlink takes p out of b's order.
func (b *book) unlink(p *place) {
	if p.prev != nil {
		p.prev.next = p.next
	} else {
		b.first = p.next
	}
	if p.next != nil {
		p.next.prev = p.prev
	} else {
		b.last = p.prev
	}
	p.prev, p.next = nil, nil
	heap.Remove(&b.byUntil, p.index)
}

// othersThan returns how many evictions hold room on the cluster name but
// own (nil: none of them), and when the first of their holds ends. There is
// one at least.
func (l *Ledger) othersThan(own *holding, name string) (evictions int, first time.Time) {
	see := func(until time.Time) {
		if first.IsZero() || until.Before(first) {
			first = until
		}
	}
	if b := l.clusters[name]; b != nil {
		evictions = len(b.byUntil)
		if own != nil && own.at[name] != nil {
			evictions--
		}
		if top := b.byUntil[0]; top.h != own {
			see(top.h.until)
		} else {
			// own's hold ends first: the next to end is a child of the top.
			for _, i := range []int{1, 2} {
				if i < len(b.byUntil) {
					see(b.byUntil[i].h.until)
				}
			}
		}
	}
	for _, f := range l.fans {
		if !f.has(name) {
			continue
		}
		for h := range f.holdings {
			if h != own && h.holds(name) {
				evictions++
				see(h.until)
			}
		}
	}
	return evictions, first
}

// untilHeap orders places by when their hold ends (container/heap).
type untilHeap []*place

func (u untilHeap) Len() int           { return len(u) }
func (u untilHeap) Less(i, j int) bool { return u[i].h.until.Before(u[j].h.until) }
func (u untilHeap) Swap(i, j int) {
	u[i], u[j] = u[j], u[i]
	u[i].index, u[j].index = i, j
}

// Push appends x, a *place, as container/heap asks.
func (u *untilHeap) Push(x any) {
	p := x.(*place)
	p.index = len(*u)
	*u = append(*u, p)
}

// Pop takes the last place off, as container/heap asks.
func (u *untilHeap) Pop() any {
	old := *u
	p := old[len(old)-1]
	old[len(old)-1] = nil
	*u = old[:len(old)-1]
	return p
}

// add counts n more replicas of h held on the cluster (fewer, negative).
func (b *book) add(h *holding, n int64) {
	b.replicas += n
	b.requests = b.requests.add(h.requests, n)
}

// heldExcept returns what is held on the cluster name by every holding but
// own (nil: none of them): the replicas and their requests.
func (l *Ledger) heldExcept(own *holding, name string) (replicas int64, rs requests) {
	if b := l.clusters[name]; b != nil {
		replicas, rs = b.replicas, slices.Clone(b.requests)
		if own != nil && own.at[name] != nil {
			n := own.at[name].replicas
			replicas -= n
			rs = rs.add(own.requests, -n)
		}
	}
	for _, f := range l.fans {
		if !f.has(name) {
			continue
		}
		n, frs := f.on(name)
		replicas += n
		rs = rs.add(frs, 1)
		if own != nil && own.fan == f && own.holds(name) {
			replicas -= own.fanReplicas
			rs = rs.add(own.requests, -own.fanReplicas)
		}
	}
	return replicas, rs
}
