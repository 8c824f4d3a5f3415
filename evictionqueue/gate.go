package evictionqueue

import (
	"errors"
	"fmt"
	"time"
)

// Gate names what a parked item waits for besides a permit (see [Park]): a
// change outside the queue that the caller learns of and announces with
// Queue.Open. Reason is its class, the gate label of the queue's parked
// gauge (GateMetrics), so it should be one of a few fixed words ("refused",
// "freeze", "transit-budget"); Key narrows it to one object when the change
// concerns one (a binding's budget of clusters in transit), and is "" for a
// gate of the whole class.
type Gate struct {
	Reason string
	Key    string
}

// String is the gate as "reason" or "reason/key".
func (g Gate) String() string {
	if g.Key == "" {
		return g.Reason
	}
	return g.Reason + "/" + g.Key
}

// Park wraps a handler error to hold the item at gate until Queue.Open
// (gate) or for at most max, when something outside the queue must change
// first and the caller learns when it does: the fleet, for an eviction with
// nowhere to go; an operator's freeze; the binding's budget of clusters in
// transit. As after RetryAfter, its permit goes back, no failure is counted,
// the item keeps its place in line for when it is pending again, and
// CancelCluster still ends it; max is bounded as RetryAfter's delay is. A
// gate opened while the handler call that parks the item ran (after the
// call began) makes the item pending again at once: the change the call
// may have missed is not lost. The result still matches err with errors.Is
// and errors.As.
func Park(gate Gate, max time.Duration, err error) error {
	if err == nil {
		err = errors.New("no reason given")
	}
	return &ParkError{Gate: gate, Max: max, Err: err}
}

// ParkError is the error [Park] returns.
type ParkError struct {
	Gate Gate          // what the item waits for
	Max  time.Duration // how long it waits at most
	Err  error         // why it waits
}

// Error describes the parked eviction and its reason.
func (e *ParkError) Error() string {
	return fmt.Sprintf("evictionqueue: waiting at %s for at most %v: %v", e.Gate, e.Max, e.Err)
}

// Unwrap returns the reason, so errors.Is and errors.As see through Park.
func (e *ParkError) Unwrap() error { return e.Err }

// GateMetrics is a Metrics that also counts the items parked at gates
// (package metrics' is): n is the number of items of queue parked now at a
// gate whose Reason is reason, told on every change of it. As the other
// Metrics calls, it is made with the queue's lock held.
type GateMetrics interface {
	Parked(queue, reason string, n int)
}

// gates is the store's record of parked items: those backing off at a gate.
type gates struct {
	at       map[*entry]Gate              // every parked entry and its gate
	by       map[Gate]map[*entry]struct{} // the entries parked at each gate
	byReason map[string]int               // how many are parked per Reason
	// opens counts Open calls; a handler call keeps its count when it
	// began (entry.index while running), and opened the count at the last
	// Open of each gate since no call ran (see openedSince), or since the
	// map last outgrew maxOpened, which then sets openedAll.
	opens     uint32
	opened    map[Gate]uint32
	openedAll uint32
}

// maxOpened bounds gates.opened: past it, every gate counts as opened
// since the calls running began, which only costs them another decision.
const maxOpened = 4096

// park records e, backing off, as parked at g.
func (s *store) park(e *entry, g Gate) {
	gs := &s.gates
	if gs.at == nil {
		gs.at, gs.by, gs.byReason = map[*entry]Gate{}, map[Gate]map[*entry]struct{}{}, map[string]int{}
	}
	gs.at[e] = g
	set := gs.by[g]
	if set == nil {
		set = map[*entry]struct{}{}
		gs.by[g] = set
	}
	set[e] = struct{}{}
	gs.byReason[g.Reason]++
	s.parkedChanged(g.Reason)
}

// unpark forgets that e was parked, if it was: it stops backing off.
func (s *store) unpark(e *entry) {
	gs := &s.gates
	g, ok := gs.at[e]
	if !ok {
		return
	}
	delete(gs.at, e)
	set := gs.by[g]
	delete(set, e)
	if len(set) == 0 {
		delete(gs.by, g)
	}
	gs.byReason[g.Reason]--
	s.parkedChanged(g.Reason)
	if gs.byReason[g.Reason] == 0 {
		delete(gs.byReason, g.Reason)
	}
}

func (s *store) parkedChanged(reason string) {
	if m, ok := s.metrics.(GateMetrics); ok {
		m.Parked(s.cfg.Name, reason, s.gates.byReason[reason])
	}
}

// open makes every item parked at g pending again at once, each keeping its
// place in line, and returns how many; a handler call running now that
// parks its item at g makes it pending at once too.
func (s *store) open(g Gate) int {
	gs := &s.gates
	gs.opens++
	if s.running > 0 {
		if gs.opened == nil {
			gs.opened = map[Gate]uint32{}
		}
		if len(gs.opened) >= maxOpened {
			clear(gs.opened)
			gs.openedAll = gs.opens
		} else {
			gs.opened[g] = gs.opens
		}
	}
	n := 0
	for e := range gs.by[g] {
		s.retryEntry(e)
		n++
	}
	return n
}

// openedSince reports whether g was opened after a handler call began
// when Open had been called began times.
func (s *store) openedSince(g Gate, began uint32) bool {
	gs := &s.gates
	after := func(at uint32) bool { return at != 0 && int32(at-began) > 0 }
	if after(gs.openedAll) {
		return true
	}
	at, ok := gs.opened[g]
	return ok && after(at)
}

// callEnded forgets the gates opened while calls ran once none runs.
func (s *store) callEnded() {
	if s.running == 0 && len(s.gates.opened) > 0 {
		clear(s.gates.opened)
	}
}

// parked returns the number of items parked at g.
func (s *store) parked(g Gate) int { return len(s.gates.by[g]) }

// asDeferred returns how long err defers its item (RetryAfter or Park) and
// the gate it parks at, if any; ok is false when err defers nothing.
func asDeferred(err error) (after time.Duration, gate Gate, parked, ok bool) {
	var p *ParkError
	if errors.As(err, &p) {
		return p.Max, p.Gate, true, true
	}
	if d := asRetryAfter(err); d != nil {
		return d.After, Gate{}, false, true
	}
	return 0, Gate{}, false, false
}
