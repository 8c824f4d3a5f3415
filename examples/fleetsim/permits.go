package main

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"
)

// dispatch hands out the permits free at now, one at a time, to the
// workers in line, settling after each: each takes its queue's head item
// (of the permit's domain) and calls the handler. Under a domain rule a
// worker whose domains have no permit free lets the next one in line, of
// the other queue, try its own; under the fleet rule nobody further in
// line gets one.
func (e *engine) dispatch(now time.Time) error {
	for {
		if err := e.settle(); err != nil {
			return err
		}
		e.syncLine()
		e.permitAt = time.Time{}
		if !e.grantNext(now) {
			return nil
		}
	}
}

// syncLine puts in line, at its end, the workers that began waiting since
// (the first queue's first), and takes out of it, newest first, those whose
// waits the queue withdrew.
func (e *engine) syncLine() {
	e.mu.Lock()
	defer e.mu.Unlock()
	for i := range 2 {
		have := 0
		for _, q := range e.line {
			if q == i {
				have++
			}
		}
		n := e.waiting(i)
		for ; have < n; have++ {
			e.line = append(e.line, i)
		}
		for j := len(e.line) - 1; j >= 0 && have > n; j-- {
			if e.line[j] == i {
				e.line = slices.Delete(e.line, j, j+1)
				have--
			}
		}
	}
}

// grantNext takes a permit at now for the first worker in line that can
// have one and hands it over; false when nobody can, with permitAt set.
func (e *engine) grantNext(now time.Time) bool {
	var tried [2]bool // workers of one queue ask for the same domains
	for j, i := range e.line {
		if tried[i] {
			continue
		}
		tried[i] = true
		domain, giveBack, ok, next := e.limiter.TakeDomainAt(now, e.askFor(i))
		if ok {
			e.line = slices.Delete(e.line, j, j+1)
			e.grant(i, domain, giveBack)
			return true
		}
		if !next.IsZero() && (e.permitAt.IsZero() || next.Before(e.permitAt)) {
			e.permitAt = next
		}
		if !e.perDomain {
			break
		}
	}
	return false
}

// askFor is the domains a permit for queue i is asked for: those its
// workers wait for, the first preferred. The workers' lists hold the same
// domains, but each in the order of the domains' head items when it was
// made, which items added since with a higher priority may have changed:
// which worker waited last is up to the goroutines, so under a domain rule
// the driver asks in the queue's order now (Queue.PendingDomains, read
// once the queues have settled).
func (e *engine) askFor(i int) []string {
	if !e.perDomain {
		return e.newestWait(i).domains // one bucket: the order does not matter
	}
	return e.queues[i].PendingDomains()
}

// newestWait is the latest wait of queue i: its domains are the queue's
// pending domains now.
func (e *engine) newestWait(i int) *permitWait {
	e.mu.Lock()
	defer e.mu.Unlock()
	for j := len(e.waits[i]) - 1; j >= 0; j-- {
		if w := e.waits[i][j]; w.ctx.Err() == nil {
			return w
		}
	}
	panic("fleetsim: a worker in line without a wait") // syncLine keeps them equal
}

// grant hands the permit to queue i's oldest waiting worker.
func (e *engine) grant(i int, domain string, giveBack func()) {
	e.mu.Lock()
	defer e.mu.Unlock()
	j := slices.IndexFunc(e.waits[i], func(w *permitWait) bool { return w.ctx.Err() == nil })
	w := e.waits[i][j]
	e.waits[i] = slices.Delete(e.waits[i], j, j+1)
	e.granted++
	var once sync.Once
	w.grant <- permitGrant{domain: domain, giveBack: func() {
		once.Do(func() {
			giveBack()
			e.mu.Lock()
			e.granted--
			e.notifyLocked()
			e.mu.Unlock()
		})
	}}
}

// permitGate is a queue's Pacer: its workers wait here until the driver
// hands them a permit (engine.dispatch).
type permitGate struct {
	e     *engine
	queue int
}

type permitWait struct {
	ctx     context.Context
	domains []string
	grant   chan permitGrant // buffered: the driver never blocks
}

type permitGrant struct {
	domain   string
	giveBack func()
}

// Wait is never called: the Queue calls WaitDomain of a DomainPacer.
func (g *permitGate) Wait(ctx context.Context) error {
	_, giveBack, err := g.WaitDomain(ctx, []string{""})
	if err == nil {
		giveBack()
		return errors.New("fleetsim: permitGate.Wait: the queue asks WaitDomain")
	}
	return err
}

// PacesByDomain is the Limiter's.
func (g *permitGate) PacesByDomain() bool { return g.e.perDomain }

// WaitDomain waits until the driver grants a permit for one of domains, or
// ctx ends.
func (g *permitGate) WaitDomain(ctx context.Context, domains []string) (string, func(), error) {
	e := g.e
	w := &permitWait{ctx: ctx, domains: domains, grant: make(chan permitGrant, 1)}
	e.mu.Lock()
	e.waits[g.queue] = append(e.waits[g.queue], w)
	e.notifyLocked()
	e.mu.Unlock()
	select {
	case p := <-w.grant:
		return p.domain, p.giveBack, nil
	case <-ctx.Done():
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.notifyLocked()
	if j := slices.Index(e.waits[g.queue], w); j >= 0 {
		e.waits[g.queue] = slices.Delete(e.waits[g.queue], j, j+1)
		return "", nil, ctx.Err()
	}
	// Granted as it was withdrawn: the permit is the worker's.
	p := <-w.grant
	return p.domain, p.giveBack, nil
}
