package python

import "testing"

// TestForget: what the reader knows of a process goes with Forget (the
// recorder calls it when the process exits): a reused pid starts afresh,
// and a recording of many short processes does not keep them all.
func TestForget(t *testing.T) {
	r := NewReader()
	for pid := 1000; pid < 1100; pid++ {
		p := r.process(pid)
		p.interp = &interpreter{}
	}
	for pid := 1000; pid < 1100; pid++ {
		r.Forget(pid)
	}
	if n := len(r.procs); n != 0 {
		t.Fatalf("%d processes still known after Forget", n)
	}
	if p := r.process(1000); p.interp != nil {
		t.Error("a reused pid kept the old process's interpreter")
	}
}
