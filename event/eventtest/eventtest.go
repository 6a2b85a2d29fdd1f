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
		add(c, &c.Samples, s)
	case *event.Map:
		m := *e
		m.BuildID = slices.Clone(e.BuildID)
		if e.Image != nil {
			im := *e.Image
			im.BuildID = slices.Clone(e.Image.BuildID)
			m.Image = &im
		}
		add(c, &c.Maps, m)
	case *event.Unmap:
		add(c, &c.Unmaps, *e)
	case *event.Comm:
		cm := *e
		cm.Argv = slices.Clone(e.Argv)
		add(c, &c.Comms, cm)
	case *event.Fork:
		add(c, &c.Forks, *e)
	case *event.Exit:
		add(c, &c.Exits, *e)
	case *event.Switch:
		add(c, &c.Switches, *e)
	case *event.Lost:
		c.Lost += e.Count
		l := *e
		c.Events = append(c.Events, &l)
	}
}

// add appends e, a copy of an event, to its kind's list and to Events.
func add[T any](c *Collector, list *[]T, e T) {
	*list = append(*list, e)
	c.Events = append(c.Events, any(&e).(event.Event))
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
