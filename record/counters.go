package record

import (
	"sync"
	"time"

	"github.com/gprof-dev/gprof/format"
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

	over format.Overhead // times are monotonic ns until attach
	done chan struct{}
	wg   sync.WaitGroup
}

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
}

func newCounterSampler(interval time.Duration, probe counterProbe) *counterSampler {
	return &counterSampler{interval: interval, probe: probe, live: map[int]bool{}, series: map[int]*procSeries{}, done: make(chan struct{})}
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
		c0 := c.probe.threadCPU()
		c.mu.Lock()
		pids = pids[:0]
		for pid := range c.live {
			pids = append(pids, pid)
		}
		c.mu.Unlock()
		now := c.probe.now()
		for _, pid := range pids {
			rss, cpu, ok := c.probe.read(pid)
			if !ok {
				continue
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
		counters := c.probe.threadCPU() - c0
		self := c.probe.selfCPU()
		c.over.Time = append(c.over.Time, c.probe.now())
		c.over.Counters = append(c.over.Counters, counters)
		c.over.Threads = append(c.over.Threads, max(self-lastSelf-counters, 0))
		lastSelf = self
	}
}

// attach gives each process of the profile its counters (the readings of
// its pid within its lifetime, exec images apart) and the profile its
// overhead, with times relative to monotonic t0. Call after stop.
func (c *counterSampler) attach(p *format.Profile, t0 int64) {
	rel := func(t int64) int64 { return max(t-t0, 0) }
	for _, pr := range p.Processes {
		s := c.series[pr.Pid]
		if s == nil {
			continue
		}
		mem := format.Counter{Name: "Memory", Category: "Memory", Description: "Resident memory (RSS) of the process"}
		cpu := format.Counter{Name: "processCPU", Category: "CPU", Description: "CPU time of the process since the previous sample, ns"}
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
	if len(c.over.Time) > 0 {
		o := c.over
		o.Time = make([]int64, len(c.over.Time))
		for i, t := range c.over.Time {
			o.Time[i] = rel(t)
		}
		p.Overhead = &o
	}
}
