package record

import "github.com/gprof-dev/gprof/profile"

// Parallelism: how many threads of a process are on a CPU at each moment,
// from the context switches a backend reports (attach.Options.Switches,
// or with OffCPU) and perf.data files hold (perf record --switch-events,
// or --latency): a thread is on a CPU from its switch in to its switch
// out, and from a sample taken while it ran, for a thread that was running
// before its first switch was seen. This is what perf 6.15 weighs samples
// with for its latency view (tools/perf/Documentation/
// cpu-and-latency-overheads.txt): a sample stands for its period divided
// by the parallelism at its moment, the wall-clock time it cost.
//
// Each process gets a counter, ParallelismCounter, which holds the
// threads' time on a CPU (ns, summed over its threads) between its
// samples: its rate, count over the time since the previous sample, is
// the parallelism, which is how the Firefox Profiler draws a counter of a
// category it does not know. A sample is taken at each change of the
// count, or, where the count changes more often than minGap, after the
// first change past minGap, with the average in between: exact where
// threads switch at most every minGap, an average over minGap where they
// switch more often.

// ParallelismCounter names the counter of a process's parallelism; its
// category is the same word.
const ParallelismCounter = "Parallelism"

type parallelism struct {
	minGap int64
	procs  map[*proc]*parState
	order  []*proc
}

type parState struct {
	running map[int]bool
	// seen is when each thread's state was last set: a live backend's
	// rings give a thread's switch out (on one CPU) and in (on another)
	// in two batches now and then, the later first, and the earlier
	// then says nothing new.
	seen map[int]int64
	n    int
	// last is when n last changed (or the count was last advanced); acc
	// the thread-ns on a CPU since the counter's last sample, taken at
	// lastEmit.
	last, acc, lastEmit int64
	times, counts       []int64
}

func newParallelism(minGap int64) *parallelism {
	return &parallelism{minGap: max(minGap, 1), procs: map[*proc]*parState{}}
}

// set notes that thread tid of pr is on a CPU (on) or off it at monotonic
// time t. A nil parallelism counts nothing.
func (p *parallelism) set(pr *proc, tid int, on bool, t int64) {
	if p == nil || pr == nil {
		return
	}
	st := p.procs[pr]
	if st == nil {
		if !on {
			return // off before it was ever seen on
		}
		st = &parState{running: map[int]bool{}, seen: map[int]int64{}, last: t, lastEmit: t, times: []int64{t}, counts: []int64{0}}
		p.procs[pr] = st
		p.order = append(p.order, pr)
	}
	if t < st.seen[tid] {
		return // older than what the thread did since
	}
	st.seen[tid] = t
	if st.running[tid] == on {
		return
	}
	st.advance(t)
	if on {
		st.running[tid] = true
		st.n++
	} else {
		delete(st.running, tid)
		st.n--
	}
	if t-st.lastEmit >= p.minGap {
		st.emit(t)
	}
}

func (st *parState) advance(t int64) {
	if t > st.last {
		st.acc += int64(st.n) * (t - st.last)
		st.last = t
	}
}

func (st *parState) emit(t int64) {
	if t <= st.lastEmit {
		return
	}
	st.times = append(st.times, t)
	st.counts = append(st.counts, st.acc)
	st.acc, st.lastEmit = 0, t
}

// end closes pr's count at monotonic time t, as its image ends (it
// exited, or exec replaced it).
func (p *parallelism) end(pr *proc, t int64) {
	if p == nil {
		return
	}
	if st := p.procs[pr]; st != nil {
		st.advance(t)
		st.n = 0
		clear(st.running)
		clear(st.seen)
		st.emit(t)
	}
}

// finish closes every count at monotonic time end.
func (p *parallelism) finish(end int64) {
	if p == nil {
		return
	}
	for _, st := range p.procs {
		st.advance(end)
		st.emit(end)
	}
}

// attach adds each process's counter; t0 is the recording's time zero.
func (p *parallelism) attach(t0 int64) {
	if p == nil {
		return
	}
	for _, pr := range p.order {
		st := p.procs[pr]
		if len(st.times) < 2 {
			continue
		}
		c := profile.Counter{Name: ParallelismCounter, Category: ParallelismCounter,
			Description: "threads of the process on a CPU (the count: their CPU time, ns, since the previous sample)"}
		for i, t := range st.times {
			c.Time = append(c.Time, max(t-t0, 0))
			c.Count = append(c.Count, st.counts[i])
		}
		pr.p.Counters = append(pr.p.Counters, c)
	}
}
