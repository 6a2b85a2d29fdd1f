//go:build linux

package perf

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/gprof-dev/gprof/attach"
	"github.com/gprof-dev/gprof/perfrecord"
)

// The session's side of several events (see events.go for what each is).

// eventError is an error opening one event that already says what to do;
// openError passes it on as it is.
type eventError struct{ err error }

func (e *eventError) Error() string { return e.err.Error() }
func (e *eventError) Unwrap() error { return e.err }

// resolveEvents resolves the events asked for (Options.Events, else
// Options.Event) into s.events. Hardware events are left out, with a
// notice, where the machine has no PMU to count them; if none is left,
// cpu-clock samples instead.
func (s *perfSession) resolveEvents(interval time.Duration, rate int) error {
	specs := s.opts.Events
	if len(specs) == 0 {
		d, err := defaultEvent(s.opts.Event)
		if err != nil {
			return err
		}
		specs = []attach.EventSpec{d}
	}
	env := &eventEnv{interval: interval, rate: rate, command: s.opts.Command, env: s.opts.Env, pids: s.opts.Pids}
	var dropped []string
	for _, spec := range specs {
		ev, err := resolveEvent(spec, env)
		if err != nil {
			return err
		}
		if spec.Kind == attach.KindHardware {
			if err := tryAlone(ev); err != nil && hardwareMissing(err) {
				dropped = append(dropped, spec.Name)
				continue
			}
		}
		s.events = append(s.events, ev)
	}
	if len(dropped) > 0 {
		what := "left out"
		if len(s.events) == 0 {
			d, _ := defaultEvent("cpu-clock")
			ev, _ := resolveEvent(d, env)
			s.events = append(s.events, ev)
			what = "sampling cpu-clock instead"
		}
		s.notice("no hardware PMU here (no %s, as in most VMs), so %s cannot be counted: %s", filepath.Join(pmuDir, "cpu"), strings.Join(dropped, ", "), what)
	}
	if s.events[0].pmu {
		// A probe cannot lead: the leader is opened on each task and
		// inherited (see perfEvent.pmu). A dummy event, which counts
		// nothing, reports the mappings, names and tasks instead.
		dummy := &perfEvent{spec: attach.EventSpec{Name: "dummy", Kind: attach.KindSoftware, Config: perfrecord.CountSWDummy}}
		dummy.attr.Type, dummy.attr.Config, dummy.attr.Sample = perfrecord.TypeSoftware, perfrecord.CountSWDummy, 1
		s.events = append([]*perfEvent{dummy}, s.events...)
		s.leader = true
	}
	return nil
}

// tryAlone opens (and closes) ev on gprof itself, as a counter, to find
// out whether the machine can count it at all.
func tryAlone(ev *perfEvent) error {
	a := ev.attr
	a.Size = uint32(unsafe.Sizeof(a))
	a.Bits |= unix.PerfBitDisabled
	a.Sample, a.Bits = 0, a.Bits&^unix.PerfBitFreq
	fd, err := perfEventOpen(&a, 0, -1, -1, unix.PERF_FLAG_FD_CLOEXEC)
	if err == nil {
		unix.Close(fd)
	}
	return err
}

// probeEvents opens (and closes) every event but the first on gprof
// itself as it will be opened on the targets, so that a refusal (a
// tracepoint's fields without the privilege, a probe at a place the
// kernel will not probe) is told before anything is launched.
func (s *perfSession) probeEvents() error {
	for _, ev := range s.events[1:] {
		a := s.extraAttr(ev)
		a.Bits |= unix.PerfBitDisabled | unix.PerfBitInherit
		if ev.pmu {
			// Not inherited (see perfEvent.pmu): a thread gprof made
			// meanwhile would fail to start.
			a.Bits &^= unix.PerfBitInherit
		}
		fd, err := perfEventOpen(&a, 0, -1, -1, unix.PERF_FLAG_FD_CLOEXEC)
		if err != nil {
			if e := eventOpenError(ev, err); e != nil {
				return e
			}
			return s.openError(err, 0, "")
		}
		unix.Close(fd)
	}
	return nil
}

// extraAttr is the attr of an event other than the first: the session's
// with the event's own settings, and no side-band records.
func (s *perfSession) extraAttr(ev *perfEvent) unix.PerfEventAttr {
	a := s.attr
	a.Type, a.Config, a.Ext1, a.Ext2, a.Sample = ev.attr.Type, ev.attr.Config, ev.attr.Ext1, ev.attr.Ext2, ev.attr.Sample
	a.Bits &^= sideBand | unix.PerfBitFreq | unix.PerfBitExcludeUser
	if !s.kernelDenied {
		a.Bits &^= unix.PerfBitExcludeKernel
	}
	a.Bits |= ev.attr.Bits & (unix.PerfBitFreq | unix.PerfBitExcludeUser | unix.PerfBitExcludeKernel)
	// A sample's count is a clock's CPU time only.
	a.Sample_type &^= perfrecord.SampleRead
	return a
}

// openExtras opens the events but the first on task tid (-1: every task)
// on each CPU that has a ring, writing into it; the probes once, for
// every task (see openProbes).
func (s *perfSession) openExtras(tid int) error {
	if tid != -1 && !s.probesOpen {
		if err := s.openProbes(tid); err != nil {
			return err
		}
	}
	for i, ev := range s.events {
		if i == 0 || ev.pmu && tid != -1 {
			continue
		}
		if err := s.openOne(i, ev, tid); err != nil {
			return err
		}
	}
	return nil
}

// openProbes opens the probes made through a probe PMU, which cannot be
// inherited (see perfEvent.pmu), on each CPU for every task, writing into
// the CPU's ring, and makes the decoder keep the samples of the targets
// alone: the processes attached whole or launched (first, the task of the
// first call) and those they start, and the threads attached alone.
// Making probes needs the privilege that events per CPU need, so this
// asks for nothing more.
func (s *perfSession) openProbes(first int) error {
	s.probesOpen = true
	has := false
	for _, ev := range s.events {
		has = has || ev.pmu
	}
	if !has {
		return nil
	}
	if s.dec.filter == nil {
		pids := s.opts.Pids
		if len(s.opts.Command) > 0 {
			pids = []int{first}
		}
		s.dec.setFilter(newTargets(pids, s.opts.Tids))
	}
	if s.unpolled == nil {
		s.unpolled = map[int]bool{}
	}
	n := len(s.fds)
	err := s.withAttr(s.cpuAttr(), func() error {
		for i, ev := range s.events {
			if i > 0 && ev.pmu {
				if err := s.openOne(i, ev, -1); err != nil {
					return err
				}
			}
		}
		return nil
	})
	for _, fd := range s.fds[n:] {
		s.unpolled[fd] = true
	}
	return err
}

// withAttr runs f with s.attr set to a, then restores it.
func (s *perfSession) withAttr(a unix.PerfEventAttr, f func() error) error {
	saved := s.attr
	s.attr = a
	defer func() { s.attr = saved }()
	return f()
}

// openOne opens event i on task tid (-1: every task) on each CPU that has
// a ring, writing into it.
func (s *perfSession) openOne(i int, ev *perfEvent, tid int) error {
	a := s.extraAttr(ev)
	s.gate(&a) // off with the clock while a Control says so
	for _, cpu := range s.cpus {
		r := s.rings[cpu]
		if r == nil {
			continue
		}
		fd, err := s.eventOpen(&a, tid, cpu)
		if err != nil {
			if err == unix.ENODEV {
				continue
			}
			if err == unix.ESRCH {
				return err
			}
			if e := eventOpenError(ev, err); e != nil {
				return &eventError{e}
			}
			return err
		}
		s.fds = append(s.fds, fd)
		if err := s.shareRing(fd, r, cpu); err != nil {
			return err
		}
		if err := s.noteEvent(fd, i); err != nil {
			return err
		}
	}
	return nil
}

// noteEvent tells the decoder that the samples of file fd are event i's,
// where there are several events.
func (s *perfSession) noteEvent(fd, i int) error {
	if s.dec == nil || s.dec.EventIDs == nil || i == 0 && s.leader {
		return nil
	}
	var id uint64
	if _, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.PERF_EVENT_IOC_ID, uintptr(unsafe.Pointer(&id))); errno != 0 {
		return fmt.Errorf("identify the %s event: %w", s.events[i].spec.Name, errno)
	}
	if s.leader {
		i--
	}
	s.dec.EventIDs[id] = i
	return nil
}
