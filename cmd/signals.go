package cmd

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"github.com/gprof-dev/gprof/attach"
	"github.com/gprof-dev/gprof/internal/atomicfile"
)

// signals ends gprof early on SIGINT (Ctrl-C), SIGTERM, SIGHUP and SIGQUIT
// (Ctrl-\).
//
// In record, the first SIGINT, SIGTERM or SIGHUP ends the recording and
// the profile is still written. Any other signal, and any signal at all in
// convert, symbolicate and report, aborts: whatever gprof is doing
// (resolving names, writing), temporary files are removed, an existing
// output file is left as it was, the terminal's status line is cleared,
// one line says so, and gprof exits with ExitSignal plus the signal's
// number. SIGQUIT always aborts, without Go's goroutine dump; while
// recording it first ends the recording as the others do, so that targets
// are left as the recording's end leaves them (a launched command is sent
// SIGTERM), then aborts before resolving names.
type signals struct {
	mu        sync.Mutex
	stop      context.CancelFunc // ends the recording; nil once used
	finishing bool               // the recording has ended
	quit      os.Signal          // abort once the recording has ended
	output    string             // the file being written, for the message
	cleanup   []func()           // run before exiting: clear status lines
	notice    func(string)       // says a first signal will not abort
	ch        chan os.Signal
}

// catchSignals starts handling the signals that end gprof. For record
// (recording true) the returned context ends at the first SIGINT, SIGTERM
// or SIGHUP; otherwise every signal aborts. Call release when done.
func catchSignals(parent context.Context, recording bool) (context.Context, *signals) {
	ctx := parent
	s := &signals{ch: make(chan os.Signal, 4)}
	if recording {
		ctx, s.stop = context.WithCancel(parent)
	}
	signal.Notify(s.ch, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	go s.loop()
	return ctx, s
}

func (s *signals) loop() {
	for sig := range s.ch {
		s.mu.Lock()
		stop, notice := s.stop, s.notice
		if stop == nil || (sig == syscall.SIGQUIT && s.finishing) {
			s.abort(sig) // never returns
		}
		s.stop = nil
		if sig == syscall.SIGQUIT {
			s.quit = sig
		} else if s.finishing && notice != nil {
			notice(fmt.Sprintf("finishing the profile (another %s aborts, writing nothing)", signalName(sig)))
		}
		s.mu.Unlock()
		stop()
	}
}

// abort ends the process. s.mu is held.
func (s *signals) abort(sig os.Signal) {
	atomicfile.Abort()
	for _, f := range s.cleanup {
		f()
	}
	msg := "gprof: interrupted by " + signalName(sig)
	switch s.output {
	case "":
	case "-":
		msg += "; standard output may hold part of a profile"
	default:
		if st, err := os.Stat(s.output); err == nil && !st.Mode().IsRegular() {
			msg += "; " + s.output + " may hold part of a profile"
		} else {
			msg += "; nothing written to " + s.output
		}
	}
	fmt.Fprintln(os.Stderr, msg)
	// A target thread suspended for a sample (macOS) would stay suspended
	// after gprof is gone: let the sample finish first.
	attach.Settle()
	code := ExitSignal + 1
	if n, ok := sig.(syscall.Signal); ok {
		code = ExitSignal + int(n)
	}
	os.Exit(code)
}

// finished says the recording has ended: what follows is finishing work,
// unless a SIGQUIT came during the recording.
func (s *signals) finished() {
	s.mu.Lock()
	s.finishing = true
	if s.quit != nil {
		s.abort(s.quit)
	}
	s.mu.Unlock()
}

// writing names the output file for the message of an abort.
func (s *signals) writing(path string) {
	s.mu.Lock()
	s.output = path
	s.mu.Unlock()
}

// onNotice sets how to tell the user that a first signal came after the
// recording ended, so it will not abort.
func (s *signals) onNotice(f func(string)) {
	s.mu.Lock()
	s.notice = f
	s.mu.Unlock()
}

// onAbort adds f to what an abort runs before exiting.
func (s *signals) onAbort(f func()) {
	s.mu.Lock()
	s.cleanup = append(s.cleanup, f)
	s.mu.Unlock()
}

// release stops handling signals: they get Go's default behavior again.
func (s *signals) release() {
	signal.Stop(s.ch)
}

func signalName(sig os.Signal) string {
	switch sig {
	case os.Interrupt:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGHUP:
		return "SIGHUP"
	case syscall.SIGQUIT:
		return "SIGQUIT"
	}
	return sig.String()
}
