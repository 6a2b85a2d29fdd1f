package cmd

import (
	"fmt"
	"io"
	"sync"

	"github.com/gprof-dev/gprof/record"
)

// statusLine redraws one line on a terminal while recording. It is only
// created when stderr is a terminal, so pipes and CI logs get none of it.
type statusLine struct {
	mu     sync.Mutex
	w      io.Writer
	drawn  bool
	closed bool
}

func newStatusLine(w io.Writer) *statusLine { return &statusLine{w: w} }

func (s *statusLine) update(p record.Progress) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	line := fmt.Sprintf("gprof: recording %5.1fs  %d samples  %d threads", p.Elapsed.Seconds(), p.Samples, p.Threads)
	if p.Lost > 0 {
		line += fmt.Sprintf("  %d lost", p.Lost)
	}
	fmt.Fprintf(s.w, "\r\x1b[K%s", line)
	s.drawn = true
}

// close erases the line so the final summary starts clean. Safe on nil.
func (s *statusLine) close() {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.drawn {
		fmt.Fprint(s.w, "\r\x1b[K")
	}
	s.closed = true
}

// phases shows what a long step is doing ("resolving names…") on one
// redrawn line. It is nil, and silent, unless stderr is a terminal and the
// user did not ask for quiet.
type phases struct{ s *statusLine }

func newPhases(w io.Writer, quiet bool) *phases {
	if quiet || !isTerminal(w) {
		return nil
	}
	return &phases{newStatusLine(w)}
}

func (p *phases) set(msg string) {
	if p == nil {
		return
	}
	p.s.mu.Lock()
	defer p.s.mu.Unlock()
	fmt.Fprintf(p.s.w, "\r\x1b[Kgprof: %s…", msg)
	p.s.drawn = true
}

func (p *phases) done() {
	if p != nil {
		p.s.close()
	}
}
