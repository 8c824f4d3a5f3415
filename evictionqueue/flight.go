package evictionqueue

import "errors"

// InProgressWith is the handler result [ErrInProgress] carrying v: the
// eviction was accepted and finishes in the background, and v is what the
// caller keeps with it until it ends (the room held for it, say). The item
// is in flight as after ErrInProgress, and v belongs to it: [Queue.Flights]
// shows it, and [Queue.EndFlight] ends the eviction once, for the one
// caller that ends it. An eviction that expires (InFlightTTL) drops v. The
// result matches ErrInProgress with errors.Is.
func InProgressWith(v any) error { return &InProgressError{Value: v} }

// InProgressError is the error [InProgressWith] returns.
type InProgressError struct {
	Value any // what the eviction in flight carries
}

// Error says that the eviction is in progress.
func (e *InProgressError) Error() string { return ErrInProgress.Error() }

// Is reports whether target is ErrInProgress.
func (e *InProgressError) Is(target error) bool { return target == ErrInProgress }

// Flight is one eviction of a key that the queue holds in flight, or whose
// handler call is running (and may put it in flight), as [Queue.Flights]
// saw it.
type Flight struct {
	Item Item
	// Value is what InProgressWith or AddInFlightWith attached; nil while
	// Running.
	Value any
	// Running: its handler call is running, and whether it ends in flight
	// is not known yet.
	Running bool

	// gen tells this flight from a later one of the same item: the
	// call's number while running, the flight's serial once in flight.
	gen uint64
}

// flights are the store's entries running or in flight by key, so that the
// evictions of one binding are found in time proportional to its own, with
// the values their handlers attached.
type flights struct {
	next    uint64
	byKey   map[string][]flightRecord // entries in flight
	running []*entry                  // entries in stateRunning: at most the workers
}

type flightRecord struct {
	e     *entry
	value any
	gen   uint64
}

// started records e, which a handler call now holds.
func (f *flights) started(e *entry) { f.running = append(f.running, e) }

// stopped forgets e's handler call, which returned.
func (f *flights) stopped(e *entry) {
	for i, r := range f.running {
		if r == e {
			last := len(f.running) - 1
			f.running[i], f.running[last] = f.running[last], nil
			f.running = f.running[:last]
			return
		}
	}
}

// flying records e, now in flight, with v.
func (f *flights) flying(e *entry, v any) {
	if f.byKey == nil {
		f.byKey = map[string][]flightRecord{}
	}
	f.next++
	f.byKey[e.item.Key] = append(f.byKey[e.item.Key], flightRecord{e: e, value: v, gen: f.next})
}

// landed forgets e, no longer in flight, and returns its record.
func (f *flights) landed(e *entry) flightRecord {
	rs := f.byKey[e.item.Key]
	for i, r := range rs {
		if r.e == e {
			rs[i] = rs[len(rs)-1]
			rs = rs[:len(rs)-1]
			if len(rs) == 0 {
				delete(f.byKey, e.item.Key)
			} else {
				f.byKey[e.item.Key] = rs
			}
			return r
		}
	}
	return flightRecord{}
}

// of lists key's flights.
func (f *flights) of(key string) []Flight {
	var out []Flight
	for _, e := range f.running {
		if e.item.Key == key {
			out = append(out, Flight{Item: e.item, Running: true, gen: uint64(e.calls)})
		}
	}
	for _, r := range f.byKey[key] {
		out = append(out, Flight{Item: r.e.item, Value: r.value, gen: r.gen})
	}
	return out
}

// record is e's record while in flight.
func (f *flights) record(e *entry) (flightRecord, bool) {
	for _, r := range f.byKey[e.item.Key] {
		if r.e == e {
			return r, true
		}
	}
	return flightRecord{}, false
}

// inProgressValue is the value an InProgress result carries; nil for a
// bare ErrInProgress.
func inProgressValue(err error) any {
	var ip *InProgressError
	if errors.As(err, &ip) {
		return ip.Value
	}
	return nil
}

// endFlight ends f if it is still the flight Flights saw (see
// Queue.EndFlight).
func (s *store) endFlight(f Flight) bool {
	e := s.index.get(f.Item.Cluster, f.Item.Key)
	switch {
	case e == nil:
		return false
	case f.Running:
		if e.state != stateRunning || uint64(e.calls) != f.gen || e.completed {
			return false
		}
		e.completed = true
		return true
	case e.state != stateInFlight:
		return false
	}
	if r, ok := s.flights.record(e); !ok || r.gen != f.gen {
		return false
	}
	return s.complete(f.Item)
}
