package gcfloor

import (
	"runtime"
	"runtime/metrics"
	"testing"
)

func heapGoal() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/goal:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

func allocated() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.TotalAlloc
}

// The first Hold raises the collector's goal by the ballast at least;
// a second one allocates no ballast.
func TestHoldOnce(t *testing.T) {
	runtime.GC()
	before := heapGoal()
	release := Hold()
	runtime.GC()
	if g := heapGoal(); g < before+Size {
		t.Errorf("heap goal %d with the ballast, %d before: want %d more at least", g, before, Size)
	}
	release()
	a := allocated()
	Hold()()
	if d := allocated() - a; d >= Size/2 {
		t.Errorf("a second Hold allocated %d bytes", d)
	}
}
