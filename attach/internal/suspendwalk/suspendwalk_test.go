package suspendwalk

import (
	"reflect"
	"testing"

	"github.com/gprof-dev/gprof/event"
	"github.com/gprof-dev/gprof/event/eventtest"
)

// TestEmitNewThread: a thread there when sampling began is named only; a
// later one is forked from the process first; only the main thread's name
// carries the command line.
func TestEmitNewThread(t *testing.T) {
	var c eventtest.Collector
	argv := []string{"app", "-x"}
	EmitNewThread(c.Handle, 5, 100, 100, "app", true, argv, true)
	EmitNewThread(c.Handle, 6, 100, 101, "worker", true, argv, true)
	EmitNewThread(c.Handle, 7, 100, 102, "late", false, argv, true)
	want := []event.Event{
		&event.Comm{Time: 5, Pid: 100, Tid: 100, Name: "app", Argv: argv, Exec: true},
		&event.Comm{Time: 6, Pid: 100, Tid: 101, Name: "worker"},
		&event.Fork{Time: 7, Pid: 100, Tid: 102, Ppid: 100, Ptid: 100},
		&event.Comm{Time: 7, Pid: 100, Tid: 102, Name: "late"},
	}
	if !reflect.DeepEqual(c.Events, want) {
		for _, e := range c.Events {
			t.Logf("got  %+v", e)
		}
		for _, e := range want {
			t.Logf("want %+v", e)
		}
		t.Error("events differ")
	}
}
