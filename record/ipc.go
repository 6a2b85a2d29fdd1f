package record

import (
	"slices"

	"github.com/gprof-dev/gprof/profile"
)

// IPC: where a recording sampled both cycles and instructions (a machine
// with a hardware PMU), each process gets a counter of its instructions
// per cycle, from the two events' samples: each sample stands for its
// period of events, so the instructions' periods over the cycles' in a
// stretch of time are the stretch's IPC, as perf stat computes it from
// the counts.

// IPCCounter names the IPC counters; their category is the same word.
const IPCCounter = "IPC"

// ipcBucket is the stretch of time each IPC figure is over.
const ipcBucket = int64(10e6) // ns

// ipcCounters adds the IPC counters.
func (b *builder) ipcCounters() {
	cyc, ins := -1, -1
	for i, ev := range b.events {
		switch ev.Name {
		case "cycles":
			cyc = i
		case "instructions":
			ins = i
		}
	}
	if cyc < 0 || ins < 0 {
		return
	}
	for _, pr := range b.all {
		if c, ok := ipcCounter(pr.p, b.events[cyc].Name, b.events[ins].Name, cyc == 0, ins == 0); ok {
			pr.p.Counters = append(pr.p.Counters, c)
		}
	}
}

// ipcCounter makes pr's IPC counter from the samples of the cycles and
// instructions events (the thread's own samples for the one that is
// first, mainCyc or mainIns). Its counts are IPC × 1000, one per
// ipcBucket in which both events were sampled, dated at the bucket's end.
func ipcCounter(pr *profile.Process, cycName, insName string, mainCyc, mainIns bool) (profile.Counter, bool) {
	cycles, instr := map[int64]int64{}, map[int64]int64{}
	add := func(m map[int64]int64, t *profile.SampleTable) {
		for i, tm := range t.Time {
			w := int64(1)
			if t.Weight != nil {
				w = int64(t.Weight[i])
			}
			m[tm/ipcBucket] += w
		}
	}
	table := func(th *profile.Thread, name string, main bool) *profile.SampleTable {
		if main {
			return &th.Samples
		}
		for i := range th.Events {
			if th.Events[i].Event == name {
				return &th.Events[i].Samples
			}
		}
		return nil
	}
	for _, th := range pr.Threads {
		if t := table(th, cycName, mainCyc); t != nil {
			add(cycles, t)
		}
		if t := table(th, insName, mainIns); t != nil {
			add(instr, t)
		}
	}
	var buckets []int64
	for k := range cycles {
		if instr[k] > 0 && cycles[k] > 0 {
			buckets = append(buckets, k)
		}
	}
	if len(buckets) == 0 {
		return profile.Counter{}, false
	}
	slices.Sort(buckets)
	c := profile.Counter{Name: IPCCounter, Category: IPCCounter,
		Description: "instructions per cycle × 1000, over 10 ms, from the samples of the cycles and instructions events"}
	for _, k := range buckets {
		c.Time = append(c.Time, (k+1)*ipcBucket)
		c.Count = append(c.Count, instr[k]*1000/cycles[k])
	}
	return c, true
}
