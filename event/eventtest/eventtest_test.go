package eventtest

import (
	"reflect"
	"testing"

	"github.com/gprof-dev/gprof/event"
	"github.com/gprof-dev/gprof/objfile"
)

// TestCollectorCopies: what a source reuses after the handler returns
// leaves the collected events as they were handed.
func TestCollectorCopies(t *testing.T) {
	var c Collector
	s := &event.Sample{Time: 1, Pid: 10, Tid: 11, Stack: []uint64{1, 2}, StackCopy: []byte{3},
		Regs: &event.Regs{IP: 4}, CalleeRegs: []uint64{5}}
	m := &event.Map{Time: 2, Pid: 10, Path: "/bin/a", BuildID: []byte{6}, Image: &objfile.Identity{CodeID: "c", BuildID: []byte{7}}}
	cm := &event.Comm{Time: 3, Pid: 10, Tid: 11, Name: "a", Argv: []string{"a", "-x"}}
	c.Handle(s)
	c.Handle(m)
	c.Handle(cm)
	c.Handle(s)

	s.Stack[0], s.StackCopy[0], s.Regs.IP, s.CalleeRegs[0], s.Tid = 0, 0, 0, 0, 12
	m.BuildID[0], m.Image.CodeID, m.Image.BuildID[0] = 0, "", 0
	cm.Argv[0] = ""

	want := event.Sample{Time: 1, Pid: 10, Tid: 11, Stack: []uint64{1, 2}, StackCopy: []byte{3},
		Regs: &event.Regs{IP: 4}, CalleeRegs: []uint64{5}}
	if len(c.Samples) != 2 || !reflect.DeepEqual(c.Samples[0], want) || !reflect.DeepEqual(c.Samples[1], want) {
		t.Errorf("samples %+v, want two of %+v", c.Samples, want)
	}
	if len(c.Maps) != 1 || c.Maps[0].BuildID[0] != 6 || c.Maps[0].Image.CodeID != "c" || c.Maps[0].Image.BuildID[0] != 7 {
		t.Errorf("maps %+v", c.Maps)
	}
	if len(c.Comms) != 1 || c.Comms[0].Argv[0] != "a" {
		t.Errorf("comms %+v", c.Comms)
	}
	if got := c.PerThread(); !reflect.DeepEqual(got, map[int]int{11: 2}) {
		t.Errorf("per thread %v", got)
	}
}

// TestCollectorOrder: Events keeps the order of every kind; Lost sums;
// Reset starts over.
func TestCollectorOrder(t *testing.T) {
	var c Collector
	evs := []event.Event{
		&event.Fork{Time: 1, Pid: 1, Tid: 2, Ppid: 1, Ptid: 1},
		&event.Comm{Time: 2, Pid: 1, Tid: 2, Name: "w"},
		&event.Lost{Time: 3, Count: 4},
		&event.Switch{Time: 4, Pid: 1, Tid: 2, Out: true},
		&event.Unmap{Time: 5, Pid: 1, Start: 6, End: 7},
		&event.Lost{Time: 6, Count: 5},
		&event.Exit{Time: 7, Pid: 1, Tid: 2},
	}
	for _, e := range evs {
		c.Handle(e)
	}
	if !reflect.DeepEqual(c.Events, evs) {
		t.Errorf("events %v, want %v", c.Events, evs)
	}
	if c.Lost != 9 || len(c.Forks) != 1 || len(c.Comms) != 1 || len(c.Switches) != 1 || len(c.Unmaps) != 1 || len(c.Exits) != 1 {
		t.Errorf("by kind: %+v", c)
	}
	c.Reset()
	if !reflect.DeepEqual(c, Collector{}) {
		t.Errorf("after Reset: %+v", c)
	}
}
