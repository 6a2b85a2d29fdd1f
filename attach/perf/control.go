//go:build linux

package perf

import (
	"golang.org/x/sys/unix"

	"github.com/gprof-dev/gprof/event"
	"github.com/gprof-dev/gprof/perfrecord"
)

// Sampling off and on (attach.Control: record -D and --control), as perf
// record does it: the sampling events (the clock and, with OffCPU, the
// switch-out events) are disabled with PERF_EVENT_IOC_DISABLE, which
// reaches every inherited copy of an event, so that while sampling is off
// no timer fires in the targets and nothing is written to the rings; and
// PERF_EVENT_IOC_ENABLE turns them on again.
//
// A disabled event reports nothing at all, mappings and new tasks
// included, and a mapping missed while sampling was off would leave later
// samples nameless. So with a Control the side-band records (mmap, comm,
// fork and exit) move to a software "dummy" event of their own per task
// and CPU, as perf record -D adds one, that stays enabled and writes into
// the same ring. Context-switch records stay with the clock event: while
// sampling is off, no off-CPU time is recorded either.

// countSWDummy is PERF_COUNT_SW_DUMMY: an event that counts nothing, for
// side-band records alone (Linux 3.12).
const countSWDummy = 9

// sidebandBits are the attr bits of the side-band records.
const sidebandBits = unix.PerfBitMmap | unix.PerfBitMmap2 | unix.PerfBitComm | unix.PerfBitCommExec |
	unix.PerfBitTask | bitBuildID

// controlState is the perf session's part of a Control.
type controlState struct {
	// on is whether the sampling events are enabled, as last applied.
	on bool
	// onExec: the events are enabled at the launched command's exec
	// (enable_on_exec), which the side-band events keep even when
	// sampling starts off.
	onExec bool
	// sideband holds the side-band events' fds, which are never
	// disabled.
	sideband map[int]bool
	// bits are the side-band bits the sampling events had (bitBuildID
	// only where the kernel knows it), moved to the side-band events.
	bits uint64
}

// gate adjusts the attr of sampling events about to be opened for the
// Control: without their side-band records, and disabled (not enabled at
// exec either) while sampling is off.
func (s *perfSession) gate(a *unix.PerfEventAttr) {
	if s.opts.Control == nil {
		return
	}
	c := &s.ctl
	if c.sideband == nil {
		c.sideband = map[int]bool{}
		c.on = s.opts.Control.StartsOn()
	}
	if a.Bits&unix.PerfBitEnableOnExec != 0 {
		c.onExec = true
	}
	if b := a.Bits & sidebandBits; b != 0 {
		c.bits = b
		a.Bits &^= sidebandBits
	}
	if !c.on {
		a.Bits = a.Bits&^unix.PerfBitEnableOnExec | unix.PerfBitDisabled
	}
}

// sidebandAttr is the dummy event that carries the side-band records.
func (s *perfSession) sidebandAttr() unix.PerfEventAttr {
	a := s.attr
	a.Type = perfrecord.TypeSoftware
	a.Config = countSWDummy
	a.Sample = 1
	a.Bits &^= unix.PerfBitFreq | unix.PerfBitContextSwitch | unix.PerfBitDisabled | unix.PerfBitEnableOnExec
	a.Bits |= s.ctl.bits
	if s.ctl.onExec {
		a.Bits |= unix.PerfBitDisabled | unix.PerfBitEnableOnExec
	}
	return a
}

// openSideband opens the side-band event of tid (-1: every task) on every
// CPU, writing into that CPU's ring.
func (s *perfSession) openSideband(tid int) error {
	if s.opts.Control == nil {
		return nil
	}
	a := s.sidebandAttr()
	return s.openOnRings(&a, tid, func(fd int) error {
		s.ctl.sideband[fd] = true
		return nil
	})
}

// applyControl turns the sampling events off or on as the Control asks, if
// it asks anything, and returns what tells the Control it is done (nil
// when nothing was asked). Samples taken before they were disabled are
// still in the rings, dated before the change: the caller drains them
// before it says so, since their Python stacks are read as they are
// drained, and a harness that waits for the acknowledgement goes on to
// its next phase as soon as it has it (a sample of the measured phase
// read after that showed the next phase's caller).
func (s *perfSession) applyControl() (applied func()) {
	c := s.opts.Control
	if c == nil {
		return nil
	}
	on, seq, ok := c.Pending()
	if !ok {
		return nil
	}
	if on == s.ctl.on {
		t := event.Now()
		return func() { c.Applied(on, t, seq) }
	}
	req := uintptr(unix.PERF_EVENT_IOC_DISABLE)
	if on {
		req = unix.PERF_EVENT_IOC_ENABLE
	}
	// The pacers (pace.go) stop setting periods first, and learn when
	// each CPU's clock was disabled (no sooner than its ioctl began) and
	// enabled (no later than it returned). They are woken after every
	// CPU's events are on: a pacer woken on this thread's CPU preempts
	// it, and on a busy machine the scheduler may then run another
	// thread first, for milliseconds.
	paced := map[int]int{}
	if s.pace != nil && s.cgroup == nil {
		for cpu, r := range s.rings {
			paced[r.fd] = cpu
		}
	}
	if !on && len(paced) > 0 {
		s.pace.pause()
	}
	var enabled [][2]int64 // CPU, time
	t := event.Now()
	for _, fd := range s.fds {
		if s.ctl.sideband[fd] {
			continue
		}
		before := event.Now()
		// A task that has exited may refuse; nothing to do then.
		unix.Syscall(unix.SYS_IOCTL, uintptr(fd), req, 0)
		if cpu, ok := paced[fd]; ok {
			if on {
				enabled = append(enabled, [2]int64{int64(cpu), event.Now()})
			} else {
				s.pace.disabled(cpu, before)
			}
		}
	}
	if !on {
		t = event.Now()
	}
	for _, e := range enabled {
		s.pace.resume(int(e[0]), e[1])
	}
	s.ctl.on = on
	return func() { c.Applied(on, t, seq) }
}
