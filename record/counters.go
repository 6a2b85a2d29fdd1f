package record

import (
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gprof-dev/gprof/profile"
)

// Counters and overhead, as the Gecko sampler records them: at every
// interval, each target process's resident memory and CPU time, and what
// gprof itself cost since the previous loop. A goroutine of its own does
// this, apart from the backend's sampling, so that it works the same with
// every backend; reading them costs a few system calls per process.

// counterSampler samples the live target processes' counters.
type counterSampler struct {
	interval time.Duration
	probe    counterProbe

	mu     sync.Mutex
	live   map[int]bool
	series map[int]*procSeries
	// seriesMu guards the readings while windows are cut from them
	// (window.go); windowed says they are, and uncalibrated that CPU
	// deltas are not to be calibrated (see calibrate).
	seriesMu     sync.Mutex
	windowed     bool
	uncalibrated bool

	over profile.Overhead // times are monotonic ns until attach
	// threads holds, every threadEvery loops, each thread's CPU time as
	// the scheduler counts it, by tid, to calibrate CPU deltas with.
	threads map[int]*threadSeries
	loops   int
	scratch map[int]int64
	// threadsAt is when each pid's threads are read next, readAt the
	// process (monotonic ns; see threadCostFactor).
	threadsAt, readAt map[int]int64
	// power holds the energy counters' readings, by name.
	powerTime []int64
	power     map[string][]float64
	done      chan struct{}
	wg        sync.WaitGroup
}

// threadSeries is one thread's first and latest CPU time readings.
type threadSeries struct {
	firstT, firstCPU, lastT, lastCPU int64
}

// threadEvery is how many loops apart threads' CPU times are read: a file
// per thread, so less often than the process counters; and, for a process
// of thousands of threads, at most once per threadCostFactor times what
// reading them took, so that the counters' cost does not grow with
// threads that only wait (calibrate needs a thread's first and latest
// readings, not many).
const (
	threadEvery      = 2
	threadCostFactor = 50
)

// procSeries is one pid's readings, as absolute values.
type procSeries struct {
	time, rss, cpu []int64
}

// counterProbe reads the OS: it is counters_linux.go's, or a stub where
// there is none.
type counterProbe interface {
	// read returns a process's resident bytes and total CPU ns.
	read(pid int) (rss, cpu int64, ok bool)
	// selfCPU is gprof's own CPU time, threadCPU the calling thread's.
	selfCPU() int64
	threadCPU() int64
	now() int64 // monotonic ns, the backends' clock
	// energy returns the machine's energy counters (Joules since an
	// arbitrary start, by name); nil when there are none.
	energy() []energyReading
	// threadCPU reads the scheduler's CPU time of every thread of pid
	// (ns, by tid) into into.
	threadsCPU(pid int, into map[int]int64)
	// powerState says why there is no energy, "" when there is.
	powerState() string
	close()
}

type energyReading struct {
	name   string
	joules float64
}

func newCounterSampler(interval time.Duration, probe counterProbe) *counterSampler {
	return &counterSampler{interval: interval, probe: probe, live: map[int]bool{}, series: map[int]*procSeries{}, readAt: map[int]int64{}, done: make(chan struct{})}
}

// started and exited keep the set of processes to sample; the builder
// calls them as processes appear and end.
func (c *counterSampler) started(pid int) {
	c.mu.Lock()
	c.live[pid] = true
	c.mu.Unlock()
}

func (c *counterSampler) exited(pid int) {
	c.mu.Lock()
	delete(c.live, pid)
	c.mu.Unlock()
}

func (c *counterSampler) start() {
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		c.run()
	}()
}

func (c *counterSampler) stop() {
	close(c.done)
	c.wg.Wait()
	c.probe.close()
}

func (c *counterSampler) run() {
	lockThread()
	t := time.NewTicker(c.interval)
	defer t.Stop()
	lastSelf := c.probe.selfCPU()
	var pids []int
	for {
		select {
		case <-c.done:
			return
		case <-t.C:
		}
		c.seriesMu.Lock()
		c0 := c.probe.threadCPU()
		// mark is this thread's CPU clock as last read: each reading
		// below costs what the clock went on by since (one clock read a
		// step rather than two; each is a system call).
		mark := c0
		c.mu.Lock()
		pids = pids[:0]
		for pid := range c.live {
			pids = append(pids, pid)
		}
		c.mu.Unlock()
		now := c.probe.now()
		for _, pid := range pids {
			// A process's CPU clock sums its threads' as it is read:
			// 0.8 ms for 10,000 threads. Such a process is read less
			// often, at most threadCostFactor times what a read took:
			// in this thread's CPU time, not the wall clock's, which on
			// a loaded machine counts the waits for a CPU too (a read
			// preempted for 3 ms put off the next by 150 ms, and a
			// program's 100 ms plateau of memory went unseen).
			if now < c.readAt[pid] {
				continue
			}
			rss, cpu, ok := c.probe.read(pid)
			r := c.probe.threadCPU()
			cost := r - mark
			mark = r
			if !ok {
				continue
			}
			if cost*threadCostFactor > int64(c.interval) {
				c.readAt[pid] = now + cost*threadCostFactor
			}
			s := c.series[pid]
			if s == nil {
				s = &procSeries{}
				c.series[pid] = s
			}
			s.time = append(s.time, now)
			s.rss = append(s.rss, rss)
			s.cpu = append(s.cpu, cpu)
		}
		if e := c.probe.energy(); len(e) > 0 {
			if c.power == nil {
				c.power = map[string][]float64{}
			}
			c.powerTime = append(c.powerTime, now)
			for _, r := range e {
				c.power[r.name] = append(c.power[r.name], r.joules)
			}
		}
		if c.loops%threadEvery == 0 {
			if c.threads == nil {
				c.threads, c.scratch, c.threadsAt = map[int]*threadSeries{}, map[int]int64{}, map[int]int64{}
			}
			for _, pid := range pids {
				if now < c.threadsAt[pid] {
					continue
				}
				clear(c.scratch)
				c.probe.threadsCPU(pid, c.scratch)
				t := c.probe.now()
				r := c.probe.threadCPU()
				c.threadsAt[pid] = now + (r-mark)*threadCostFactor
				mark = r
				for tid, cpu := range c.scratch {
					ts := c.threads[tid]
					if ts == nil {
						ts = &threadSeries{firstT: t, firstCPU: cpu}
						c.threads[tid] = ts
					}
					ts.lastT, ts.lastCPU = t, cpu
				}
			}
		}
		c.loops++
		counters := c.probe.threadCPU() - c0
		self := c.probe.selfCPU()
		c.over.Time = append(c.over.Time, c.probe.now())
		c.over.Counters = append(c.over.Counters, counters)
		c.over.Threads = append(c.over.Threads, max(self-lastSelf-counters, 0))
		lastSelf = self
		c.seriesMu.Unlock()
	}
}

// attach gives each process of the profile its counters (the readings of
// its pid within its lifetime, exec images apart) and the profile its
// overhead, with times relative to monotonic t0. Call after stop.
func (c *counterSampler) attach(p *profile.Profile, t0 int64) {
	rel := func(t int64) int64 { return max(t-t0, 0) }
	for _, pr := range p.Processes {
		s := c.series[pr.Pid]
		if s == nil {
			continue
		}
		mem := profile.Counter{Name: "Memory", Category: "Memory", Description: "Resident memory (RSS) of the process"}
		cpu := profile.Counter{Name: "processCPU", Category: "CPU", Description: "CPU time of the process since the previous sample, ns"}
		var prevRSS, prevCPU int64
		for i, t := range s.time {
			r := rel(t)
			if r < pr.Start || pr.End >= 0 && r > pr.End {
				continue
			}
			first := len(mem.Time) == 0
			mem.Time = append(mem.Time, r)
			mem.Count = append(mem.Count, s.rss[i]-prevRSS)
			cpu.Time = append(cpu.Time, r)
			if first {
				cpu.Count = append(cpu.Count, 0)
			} else {
				cpu.Count = append(cpu.Count, max(s.cpu[i]-prevCPU, 0))
			}
			prevRSS, prevCPU = s.rss[i], s.cpu[i]
		}
		if len(mem.Time) > 0 {
			pr.Counters = append(pr.Counters, mem, cpu)
		}
	}
	c.attachPower(p, rel)
	if !c.uncalibrated {
		c.calibrate(p, rel)
	}
	if len(c.over.Time) > 0 {
		o := c.over
		o.Time = make([]int64, len(c.over.Time))
		for i, t := range c.over.Time {
			o.Time[i] = rel(t)
		}
		p.Overhead = &o
	}
	trimCounters(p)
}

// trimCounters drops the counter and overhead readings taken after
// sampling stopped: the counters run until the backend returns, which for
// a command that outlived its recording is after its grace to end, and
// the profile ends where sampling did.
func trimCounters(p *profile.Profile) {
	end := p.Meta.Duration
	if end <= 0 {
		return
	}
	// Readings are in time order: how many come at or before end.
	upTo := func(ts []int64) int {
		if i := slices.IndexFunc(ts, func(t int64) bool { return t > end }); i >= 0 {
			return i
		}
		return len(ts)
	}
	for _, pr := range p.Processes {
		for i := range pr.Counters {
			c := &pr.Counters[i]
			n := upTo(c.Time)
			c.Time, c.Count = c.Time[:n], c.Count[:n]
		}
		pr.Counters = slices.DeleteFunc(pr.Counters, func(c profile.Counter) bool { return len(c.Time) == 0 })
	}
	if o := p.Overhead; o != nil {
		n := upTo(o.Time)
		o.Time, o.Counters, o.Threads = o.Time[:n], o.Counters[:n], o.Threads[:n]
	}
}

// pWhPerJoule converts Joules to the picowatt-hours the front-end's power
// tracks count.
const pWhPerJoule = 1e12 / 3600

// attachPower gives the first process the machine's energy counters, as
// the Gecko profiler gives them to the parent process, and says in the
// profile's meta when there are none: no power PMU, as in most VMs, or
// one whose counters do not count.
func (c *counterSampler) attachPower(p *profile.Profile, rel func(int64) int64) {
	if p.Meta.Extra == nil {
		p.Meta.Extra = map[string]string{}
	}
	if why := c.probe.powerState(); why != "" {
		p.Meta.Extra["power"] = why
		return
	}
	if len(p.Processes) == 0 {
		return
	}
	var names []string
	for name := range c.power {
		names = append(names, name)
	}
	slices.Sort(names)
	counted := false
	for _, name := range names {
		v := c.power[name]
		ctr := profile.Counter{Name: "Power: " + name, Category: "power", Description: "Energy of " + name + " (perf's power PMU), pWh since the previous sample"}
		for i := 1; i < len(v); i++ {
			d := int64((v[i] - v[i-1]) * pWhPerJoule)
			counted = counted || d != 0
			ctr.Time = append(ctr.Time, rel(c.powerTime[i]))
			ctr.Count = append(ctr.Count, max(d, 0))
		}
		if len(ctr.Time) > 0 {
			p.Processes[0].Counters = append(p.Processes[0].Counters, ctr)
		}
	}
	if !counted {
		p.Processes[0].Counters = slices.DeleteFunc(p.Processes[0].Counters, func(c profile.Counter) bool { return c.Category == "power" })
		p.Meta.Extra["power"] = "the power PMU's counters (" + strings.Join(names, ", ") + ") did not count, as in most VMs: no energy recorded"
		return
	}
	p.Meta.Extra["power"] = strings.Join(names, ", ")
}

// calibrate scales each thread's CPU deltas between its first and latest
// CPU time readings so that they add up to what the scheduler counted
// there. The sampling clock (perf's cpu-clock) runs a few percent fast of
// the scheduler's count on a loaded machine (it also counts some of the
// context switch, and the sampling interrupt); the Gecko model's CPU
// delta is the thread's own CPU time, which the scheduler's count is.
// Samples outside the readings keep their deltas.
func (c *counterSampler) calibrate(p *profile.Profile, rel func(int64) int64) {
	for _, pr := range p.Processes {
		for _, th := range pr.Threads {
			ts := c.threads[th.Tid]
			if ts == nil || ts.lastT <= ts.firstT {
				continue
			}
			from, to := rel(ts.firstT), rel(ts.lastT)
			if from < th.Start || th.End >= 0 && to > th.End {
				continue // the tid's readings are another thread's
			}
			sm := &th.Samples
			var sum int64
			for i, t := range sm.Time {
				if t > from && t <= to && sm.CPUDelta[i] > 0 {
					sum += sm.CPUDelta[i]
				}
			}
			want := ts.lastCPU - ts.firstCPU
			if sum <= 0 || want <= 0 {
				continue
			}
			scale := float64(want) / float64(sum)
			if scale < 0.5 || scale > 2 {
				continue // readings and samples disagree too much to trust
			}
			for i, t := range sm.Time {
				if t > from && t <= to && sm.CPUDelta[i] > 0 {
					sm.CPUDelta[i] = int64(float64(sm.CPUDelta[i])*scale + 0.5)
				}
			}
		}
	}
}
