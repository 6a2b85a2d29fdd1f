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
