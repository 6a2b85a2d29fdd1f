package mach

import (
	"errors"
	"fmt"
	"time"

	"github.com/gprof-dev/gprof/attach/internal/suspendwalk"
)

// How the mach backend schedules its ticks.
const (
	machMinInterval = 100 * time.Microsecond
	machSlowPeriod  = 100 * time.Millisecond // thread names
)

// machSchedule returns the tick interval for the one asked for (0 is the
// default, 1ms), how many ticks apart the slow work (thread names) is done,
// and a notice when the interval had to be raised.
func machSchedule(asked time.Duration) (interval time.Duration, slowEvery int, notice string) {
	interval = asked
	if interval <= 0 {
		interval = time.Millisecond
	}
	if interval < machMinInterval {
		notice = fmt.Sprintf("the mach backend samples at most every %v (asked for every %v)", machMinInterval, interval)
		interval = machMinInterval
	}
	return interval, max(1, int(machSlowPeriod/interval)), notice
}

// machMinRun is the CPU time that makes a thread asleep at the tick worth
// a sample: a twentieth of the interval, as the ptrace backend does, so
// that short bursts between ticks are not lost.
func machMinRun(interval time.Duration) int64 { return int64(interval / 20) }

// machProc is one recorded process: its threads' sampler and its image
// list, found once dyld has published it.
type machProc struct {
	pid      int
	sampler  *machSampler
	images   *machImages
	reader   machTask               // reads memory (a read port will do)
	dyldAddr func() (uint64, error) // task_info(TASK_DYLD_INFO)
	alive    func() bool            // the pid still exists
	warned   map[string]bool
}

func newMachProc(pid int, s *machSampler, reader machTask, dyldAddr func() (uint64, error), alive func() bool) *machProc {
	return &machProc{pid: pid, sampler: s, reader: reader, dyldAddr: dyldAddr, alive: alive, warned: map[string]bool{}}
}

// tick samples the process once and reports false when it is gone. The
// threads come first: a launched command's first tick reports its exec,
// and the images the new program has must be reported at or after that.
func (p *machProc) tick(slow bool, notice func(string)) bool {
	err := p.sampler.tick(slow)
	if errors.Is(err, suspendwalk.ErrTaskGone) || (err != nil && !p.alive()) {
		return false
	}
	if err != nil {
		p.warn(notice, fmt.Sprintf("pid %d: %v", p.pid, err))
	}
	if p.images == nil {
		// dyld publishes its image list as it starts: a process launched
		// suspended may not have one yet.
		if addr, err := p.dyldAddr(); err == nil && addr != 0 {
			p.images = newMachImages(p.reader, p.pid, addr)
		}
	}
	if p.images != nil {
		if err := p.images.poll(p.sampler.emit, p.sampler.now()); err != nil && !errors.Is(err, errListChanging) {
			p.warn(notice, fmt.Sprintf("pid %d: %v", p.pid, err))
		}
	}
	return true
}

// warn gives each distinct notice once.
func (p *machProc) warn(notice func(string), msg string) {
	if !p.warned[msg] {
		p.warned[msg] = true
		notice(msg)
	}
}
