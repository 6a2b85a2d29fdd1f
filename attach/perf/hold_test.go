//go:build linux

package perf

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/gprof-dev/gprof/attach"
	"github.com/gprof-dev/gprof/event"
)

// A command that ends within the hold is handled only once it has ended,
// and Ahead saw every event before the handler did, in the same order.
func TestFirstEventsHeldBack(t *testing.T) {
	skipIfNoPerf(t)
	// Long enough for any machine to run true within it.
	old := holdFor
	holdFor = time.Minute
	defer func() { holdFor = old }()

	type seen struct {
		kind     string
		pid, tid int
	}
	what := func(ev event.Event) seen {
		switch e := ev.(type) {
		case *event.Sample:
			return seen{"sample", e.Pid, e.Tid}
		case *event.Map:
			return seen{"map " + e.Path, e.Pid, 0}
		case *event.Comm:
			return seen{"comm " + e.Name, e.Pid, e.Tid}
		case *event.Fork:
			return seen{"fork", e.Pid, e.Tid}
		case *event.Exit:
			return seen{"exit", e.Pid, e.Tid}
		}
		return seen{kind: "other"}
	}
	var ahead, handled []seen
	exited := map[int]bool{} // pids whose exit Ahead saw
	commandPid := 0
	var exitedFirst []bool // whether the command's exit was seen ahead of each handled event
	opts := attach.Options{Command: []string{"true"}, Interval: time.Millisecond}
	opts.Ahead = func(ev event.Event) {
		s := what(ev)
		ahead = append(ahead, s)
		if c, ok := ev.(*event.Comm); ok && c.Exec && c.Name == "true" {
			commandPid = c.Pid
		}
		if s.kind == "exit" && s.pid == s.tid {
			exited[s.pid] = true
		}
	}
	_, err := attach.Record(context.Background(), opts, func(ev event.Event) {
		handled = append(handled, what(ev))
		exitedFirst = append(exitedFirst, commandPid != 0 && exited[commandPid])
	})
	if err != nil {
		t.Fatalf("Record: %v", err)
	}
	if commandPid == 0 {
		t.Fatalf("Ahead saw no exec of true among %d events", len(ahead))
	}
	if len(handled) == 0 || !exitedFirst[0] {
		t.Errorf("the handler had its first event before Ahead saw the command's exit")
	}
	maps := 0
	for i, s := range handled {
		if i >= len(ahead) || ahead[i] != s {
			t.Fatalf("handled event %d (%+v) is not the one Ahead saw there (%d seen ahead)", i, s, len(ahead))
		}
		if s.pid == commandPid && len(s.kind) > 4 && s.kind[:4] == "map " {
			maps++
		}
	}
	if len(ahead) != len(handled) {
		t.Errorf("Ahead saw %d events, the handler %d", len(ahead), len(handled))
	}
	if maps == 0 {
		t.Errorf("no mapping of the command reached Ahead and the handler")
	}
}

// The hold ends at its time, and while the reader has one spare batch
// left: holding that one would have it make new ones.
func TestHoldOn(t *testing.T) {
	start := time.Now()
	end := start.Add(holdFor)
	for _, c := range []struct {
		at    time.Duration
		spare int
		want  bool
	}{
		{0, 4, true},
		{holdFor - time.Millisecond, 2, true},
		{holdFor, 4, false},
		{0, 1, false},
		{0, 0, false},
	} {
		if got := holdOn(start.Add(c.at), end, c.spare); got != c.want {
			t.Errorf("holdOn(%v in, %d spare) = %v, want %v", c.at, c.spare, got, c.want)
		}
	}
}

// touchRings reads each ring's pages within its share of touchBudget.
func TestTouchRings(t *testing.T) {
	ps := os.Getpagesize()
	small := &ring{data: make([]byte, 4*ps)}
	big := &ring{data: make([]byte, touchBudget)}
	for _, r := range []*ring{small, big} {
		for i := 0; i < len(r.data); i += ps {
			r.data[i] = 1
		}
	}
	if got := small.touch(len(small.data)); got != 4 {
		t.Errorf("a 4-page ring: %d pages read, want 4", got)
	}
	if got := small.touch(2 * ps); got != 2 {
		t.Errorf("2 pages' worth of a 4-page ring: %d pages read, want 2", got)
	}
	select {
	case <-touchRings([]*ring{small, big}):
	case <-time.After(time.Minute):
		t.Fatal("touchRings did not finish")
	}
	// Half the budget each: the big ring's first half, all of the small.
	if want := uint64(4 + touchBudget/2/ps); touchSink.Load() != want {
		t.Errorf("touchRings read %d pages, want %d", touchSink.Load(), want)
	}
}
