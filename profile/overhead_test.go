package profile

import "testing"

func TestOverheadStats(t *testing.T) {
	if _, ok := (*Overhead)(nil).Stats(); ok {
		t.Error("nil overhead has statistics")
	}
	o := &Overhead{
		Time:     []int64{1e6, 2e6, 4e6},
		Counters: []int64{1000, 3000, 2000},
		Threads:  []int64{10000, 20000, 0},
	}
	s, ok := o.Stats()
	if !ok {
		t.Fatal("no statistics")
	}
	want := OverheadStats{
		MinCounter: 1, MaxCounter: 3, MeanCounter: 2,
		MinThread: 0, MaxThread: 20, MeanThread: 10,
		MinOverhead: 2, MaxOverhead: 23, MeanOverhead: 12,
		MinInterval: 1000, MaxInterval: 2000, MeanInterval: 1500,
		OverheadDurations: 36, ProfiledDuration: 3000, OverheadPercentage: 0.012,
		SamplingCount: 3,
	}
	if s != want {
		t.Errorf("stats\n%+v\nwant\n%+v", s, want)
	}
}
