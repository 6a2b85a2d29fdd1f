//go:build linux

package perf

import "testing"

// What a per-CPU layout keeps: the targets' records, those of the
// processes they start, none of a pid that comes back for another
// process; system-wide, everything but the idle task, gprof and (without
// -k) the kernel's threads.
func TestTargetsKeep(t *testing.T) {
	tg := newTargets([]int{100}, []int{205})
	tg.Fork(100, 100) // a new thread of 100
	tg.Fork(300, 100) // 100 starts process 300
	tg.Fork(400, 999) // an unrelated process
	tg.Fork(205, 1)   // harmless for a thread followed alone
	for _, c := range []struct {
		pid, tid int
		want     bool
	}{
		{100, 100, true}, {100, 101, true}, {300, 300, true}, {300, 301, true},
		{400, 400, false}, {200, 205, true}, {200, 206, false}, {0, 0, false},
	} {
		if got := tg.Keep(c.pid, c.tid); got != c.want {
			t.Errorf("keep(%d, %d) = %v, want %v", c.pid, c.tid, got, c.want)
		}
	}
	// 300 exits and its pid comes back for a process 100 did not start.
	tg.forget(300)
	tg.Fork(300, 999)
	if tg.Keep(300, 300) {
		t.Errorf("a reused pid is still followed")
	}
	if got := tg.followed(); len(got) != 1 || got[0] != 100 {
		t.Errorf("followed = %v, want [100]", got)
	}

	sys := systemTargets([]int{3, 4}, false)
	sys.self = 50
	sys.Fork(60, kthreadd) // a new kernel thread
	sys.Fork(70, 1)        // a new process
	for _, c := range []struct {
		pid  int
		want bool
	}{{0, false}, {1, true}, {2, false}, {3, false}, {50, false}, {60, false}, {70, true}} {
		if got := sys.Keep(c.pid, c.pid); got != c.want {
			t.Errorf("system-wide keep(%d) = %v, want %v", c.pid, got, c.want)
		}
	}
	if withK := systemTargets([]int{3}, true); !withK.Keep(3, 3) {
		t.Errorf("system-wide with -k drops kernel thread 3")
	}
}
