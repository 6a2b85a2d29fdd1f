// Package eventtest gathers the events a source hands its event.Handler,
// for the tests of backends and translators.
package eventtest

import (
	"slices"

	"github.com/gprof-dev/gprof/event"
)

// A Collector keeps copies of the events handed to Handle, both in the
// order they came and by kind. The handler contract lets a backend reuse an
// event and its slices once the handler returns, so each event is copied
// with everything it points to (but Sample.Interp, which is opaque).
//
// Handle is an event.Handler; like any handler it is called from one
// goroutine at a time, and the fields are read once the source is done.
type Collector struct {
	// Events holds every event in the order handed; the fields below
	// hold the same events by kind.
	Events []event.Event

	Samples  []event.Sample
	Maps     []event.Map
	Unmaps   []event.Unmap
	Comms    []event.Comm
	Forks    []event.Fork
	Exits    []event.Exit
	Switches []event.Switch
	// Lost sums the counts of the Lost events.
	Lost uint64
}

// Handle records e. It is the Collector's event.Handler.
func (c *Collector) Handle(e event.Event) {
	switch e := e.(type) {
	case *event.Sample:
		s := *e
		s.Stack = slices.Clone(e.Stack)
		s.StackCopy = slices.Clone(e.StackCopy)
		s.CalleeRegs = slices.Clone(e.CalleeRegs)
		if e.Regs != nil {
			r := *e.Regs
			s.Regs = &r
		}
		c.Samples = append(c.Samples, s)
		c.Events = append(c.Events, &s)
	case *event.Map:
		m := *e
		m.BuildID = slices.Clone(e.BuildID)
		if e.Image != nil {
			im := *e.Image
			m.Image = &im
		}
		c.Maps = append(c.Maps, m)
		c.Events = append(c.Events, &m)
	case *event.Unmap:
		u := *e
		c.Unmaps = append(c.Unmaps, u)
		c.Events = append(c.Events, &u)
	case *event.Comm:
		cm := *e
		cm.Argv = slices.Clone(e.Argv)
		c.Comms = append(c.Comms, cm)
		c.Events = append(c.Events, &cm)
	case *event.Fork:
		f := *e
		c.Forks = append(c.Forks, f)
		c.Events = append(c.Events, &f)
	case *event.Exit:
		x := *e
		c.Exits = append(c.Exits, x)
		c.Events = append(c.Events, &x)
	case *event.Switch:
		sw := *e
		c.Switches = append(c.Switches, sw)
		c.Events = append(c.Events, &sw)
	case *event.Lost:
		l := *e
		c.Lost += l.Count
		c.Events = append(c.Events, &l)
	}
}

// Reset forgets every event collected so far, so that a test can look at
// what one step of a source hands on.
func (c *Collector) Reset() { *c = Collector{} }

// PerThread counts the samples of each thread, by tid.
func (c *Collector) PerThread() map[int]int {
	n := map[int]int{}
	for _, s := range c.Samples {
		n[s.Tid]++
	}
	return n
}
