package cmd

import (
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/gprof-dev/gprof/record"
)

// statusLine redraws one line on a terminal while recording. It is only
// created when stderr is a terminal, so pipes and CI logs get none of it.
//
// A pinned line lives on the terminal's bottom row, below a scroll region
// that holds everything else, so a launched command can write to the same
// terminal without the two ever mixing (apt draws its progress bar the same
// way).
type statusLine struct {
	mu     sync.Mutex
	w      io.Writer
	drawn  bool
	closed bool
	rows   int // terminal height when pinned, else 0
}

func newStatusLine(w io.Writer) *statusLine { return &statusLine{w: w} }

// newPinnedStatusLine reserves the bottom row of the terminal w for the
// status line. It returns nil if the terminal's size is unknown or tiny.
func newPinnedStatusLine(w io.Writer) *statusLine {
	rows := terminalRows(w)
	if rows < 4 {
		return nil
	}
	// Make room for the row, confine scrolling above it, and put the
	// cursor back where the command's output will continue.
	fmt.Fprintf(w, "\n\x1b7\x1b[1;%dr\x1b8\x1b[1A", rows-1)
	return &statusLine{w: w, rows: rows}
}

func (s *statusLine) draw(line string) {
	if s.rows > 0 {
		fmt.Fprintf(s.w, "\x1b7\x1b[%d;1H\x1b[K%s\x1b8", s.rows, line)
	} else {
		fmt.Fprintf(s.w, "\r\x1b[K%s", line)
	}
	s.drawn = true
}

func (s *statusLine) update(p record.Progress) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	line := fmt.Sprintf("gprof: recording %5.1fs  %s  %s", p.Elapsed.Seconds(), plural(int(p.Samples), "sample"), plural(p.Threads, "thread"))
	if p.Lost > 0 {
		line += fmt.Sprintf("  %d lost", p.Lost)
	}
	s.draw(line)
}

// println prints a line of its own above the status line (which the next
// update redraws). Without a status line it just prints to stderr.
func (s *statusLine) println(line string) {
	if s == nil {
		fmt.Fprintln(os.Stderr, line)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.rows == 0 && s.drawn {
		fmt.Fprint(s.w, "\r\x1b[K")
	}
	fmt.Fprintln(s.w, line)
}

// close erases the line (and gives a pinned line's row back to the
// terminal) so the final summary starts clean. Safe on nil.
func (s *statusLine) close() {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	switch {
	case s.rows > 0:
		fmt.Fprintf(s.w, "\x1b7\x1b[r\x1b[%d;1H\x1b[K\x1b8", s.rows)
	case s.drawn:
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
	p.s.draw("gprof: " + msg + "…")
}

// println prints a line of its own, which the next set redraws under.
func (p *phases) println(line string) {
	if p == nil {
		fmt.Fprintln(os.Stderr, line)
		return
	}
	p.s.println(line)
}

func (p *phases) done() {
	if p != nil {
		p.s.close()
	}
}
