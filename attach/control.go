package attach

import (
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/gprof-dev/gprof/event"
)

// A Control turns sampling off and on while a recording runs, as perf's
// events are disabled and enabled (record's -D/--delay and --control).
// Whoever drives it (a delay, a control FIFO) calls Set; the backend
// applies each change and says when (Applied). A backend that can really
// stop sampling does so (perf disables its events; ptrace stops stopping
// threads), so that a disabled stretch costs the targets nothing; for the
// others the dispatcher applies changes at once and drops what they
// deliver meanwhile. Either way Record delivers no sample, and no switch,
// dated while sampling was off.
//
// Changes are recorded in time order (Log), for the profile's paused
// ranges.
type Control struct {
	mu   sync.Mutex
	cond *sync.Cond
	// want is what was asked last; seq counts requests and done is the
	// last request the backend has applied (with every one before it).
	want      bool
	seq, done uint64
	// on is what the backend has applied; log its changes.
	on  bool
	log []Toggle
	// wake has a value while a request waits for the backend.
	wake chan struct{}
	// delay: see NewControl; started is set once the targets run.
	delay   time.Duration
	started bool
	ended   bool
}

// Toggle is a change the backend applied: sampling on or off from Time
// (event.Now's clock).
type Toggle struct {
	Time int64
	On   bool
}

// NewControl returns a control that starts with sampling on, or, with
// delay, off: a positive delay turns it on that long after the targets
// run (Started), a negative one only when Set says so.
func NewControl(delay time.Duration) *Control {
	c := &Control{want: delay == 0, on: delay == 0, delay: delay, wake: make(chan struct{}, 1)}
	c.cond = sync.NewCond(&c.mu)
	return c
}

// Set asks for sampling on or off and waits until the backend has done it,
// or the recording has ended. It reports whether sampling was still being
// recorded (false once the recording ended).
func (c *Control) Set(on bool) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ended {
		return false
	}
	c.seq++
	seq := c.seq
	c.want = on
	select {
	case c.wake <- struct{}{}:
	default:
	}
	for c.done < seq && !c.ended {
		c.cond.Wait()
	}
	return !c.ended || c.done >= seq
}

// Started says the targets run (a launched command has exec'd, attached
// processes are sampled): a positive delay counts from here. Backends
// call it; the dispatcher also calls it at the first event, for those that
// do not. Only the first call counts.
func (c *Control) Started() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.started {
		return
	}
	c.started = true
	if c.delay > 0 {
		time.AfterFunc(c.delay, func() { c.Set(true) })
	}
}

// Wake receives a value when a request waits for the backend to apply it.
func (c *Control) Wake() <-chan struct{} { return c.wake }

// Pending returns what the backend is asked to do, and the request that
// asked, when a request waits (ok); the backend then calls Applied.
func (c *Control) Pending() (on bool, seq uint64, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.want, c.seq, c.done < c.seq
}

// Applied records that the backend has turned sampling on or off at time
// t, as request seq (from Pending) asked, and lets the requests up to it
// return. A backend turning sampling off takes t after it stopped
// sampling; turning it on, before it starts again.
func (c *Control) Applied(on bool, t int64, seq uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if on != c.on {
		c.on = on
		c.log = append(c.log, Toggle{Time: t, On: on})
	}
	c.done = max(c.done, seq)
	c.cond.Broadcast()
}

// On reports whether sampling is on, as the backend last applied.
func (c *Control) On() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.on
}

// StartsOn reports whether sampling is on from the start: no delay.
func (c *Control) StartsOn() bool { return c.delay == 0 }

// Log returns the changes applied so far, in time order.
func (c *Control) Log() []Toggle {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.log)
}

// LogFrom returns the changes applied after the first i.
func (c *Control) LogFrom(i int) []Toggle {
	c.mu.Lock()
	defer c.mu.Unlock()
	if i >= len(c.log) {
		return nil
	}
	// Entries are never changed once appended.
	return c.log[i:len(c.log):len(c.log)]
}

// Ended says the recording is over: requests waiting, and those to come,
// return at once.
func (c *Control) Ended() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ended = true
	c.cond.Broadcast()
}

// onAt reports whether sampling was on at time t, by the log.
func (c *Control) onAt(t int64) (on bool, since int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	i := sort.Search(len(c.log), func(i int) bool { return c.log[i].Time > t })
	if i == 0 {
		return c.delay == 0, 0
	}
	return c.log[i-1].On, c.log[i-1].Time
}

// controlled wraps h so that nothing dated while sampling was off gets
// through: samples and switches. The first sample of a thread after
// sampling was turned on again has its CPU time capped by the time since
// then, for backends whose deltas count from the thread's previous
// sample. It also calls Started at the first event.
func controlled(c *Control, h event.Handler) event.Handler {
	last := map[int]int64{} // tid: time of its latest sample delivered
	first := true
	return func(ev event.Event) {
		if first {
			first = false
			c.Started()
		}
		switch e := ev.(type) {
		case *event.Sample:
			on, since := c.onAt(e.Time)
			if !on {
				return
			}
			if prev, ok := last[e.Tid]; ok && prev < since && e.CPUDelta > e.Time-since {
				e.CPUDelta = max(e.Time-since, 0)
			}
			last[e.Tid] = e.Time
		case *event.Switch:
			if on, _ := c.onAt(e.Time); !on {
				return
			}
		case *event.Exit:
			delete(last, e.Tid)
		}
		h(ev)
	}
}

// applyAtOnce applies c's requests as they come, for a backend that cannot
// stop sampling itself (controlled drops what it delivers meanwhile),
// until stop is closed.
func applyAtOnce(c *Control, stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		case <-c.Wake():
			if on, seq, ok := c.Pending(); ok {
				c.Applied(on, event.Now(), seq)
			}
		}
	}
}
