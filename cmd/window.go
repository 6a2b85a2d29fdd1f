package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/urfave/cli/v2"

	"github.com/gprof-dev/gprof/format"
	"github.com/gprof-dev/gprof/format/gecko"
	"github.com/gprof-dev/gprof/format/processed"
	"github.com/gprof-dev/gprof/internal/atomicfile"
	"github.com/gprof-dev/gprof/profile"
	"github.com/gprof-dev/gprof/record"
)

// record --switch-output: perf record's output in windows. On SIGUSR2 (and a
// --control "snapshot"), every TIME, or every SIZE of profile data, the
// window so far is written as a complete profile of its own, named as perf
// names its files, OUTPUT.YYYYMMDDhhmmssSSS (the local time it closed),
// and recording goes on with the next window: memory holds one window at
// most. --switch-max-files N keeps the newest N files of the recording,
// removing older ones. With --push, each window is sent as it closes, by a
// goroutine of its own so that recording never waits for the collector; a
// window that cannot be sent stays on disk and is tried again, oldest
// first, when the next one closes, within --switch-max-files.

// switchOutput is what --switch-output asks for.
type switchOutput struct {
	signal bool          // SIGUSR2 (always, with any of them)
	every  time.Duration // 0: not by time
	size   int64         // 0: not by size
}

// parseSwitchOutput reads --switch-output's value: "signal", a time (30s,
// 5m, 1h, 1d as perf takes them, or a Go duration such as 500ms or 1m30s)
// or a size (100M, 1G; B, K, M, G in capitals, as perf takes them).
func parseSwitchOutput(s string) (switchOutput, error) {
	var so switchOutput
	v := strings.TrimSpace(s)
	bad := usagef("invalid --switch-output %q: use signal (SIGUSR2 closes a window), a time such as 30s, 5m or 1h, or a size such as 100M or 1G", s)
	if v == "signal" {
		so.signal = true
		return so, nil
	}
	if v == "" {
		return so, bad
	}
	switch v[len(v)-1] {
	case 'B', 'K', 'M', 'G':
		n, err := parseSize(v)
		if err != nil {
			return so, bad
		}
		if n < 64<<10 {
			return so, usagef("--switch-output %s is too small: give at least 64K of profile data a window", s)
		}
		so.size = n
		return so, nil
	case 'd':
		n, err := strconv.ParseFloat(v[:len(v)-1], 64)
		if err != nil || !(n > 0) {
			return so, bad
		}
		so.every = time.Duration(n * float64(24*time.Hour))
	default:
		d, err := time.ParseDuration(v)
		if err != nil {
			return so, bad
		}
		so.every = d
	}
	if so.every < 100*time.Millisecond || so.every > maxSeconds {
		return so, usagef("--switch-output %s is out of range: give 100ms to 366 days", s)
	}
	return so, nil
}

// switchOutputAlone rewrites record's "--switch-output" given without a
// value, as perf takes it, to "--switch-output=signal", which urfave/cli
// can parse. Only record's own flags are looked at: the first argument
// that is not one starts the command to profile.
func switchOutputAlone(app *cli.App, args []string) []string {
	if len(args) < 3 || args[1] != "record" {
		return args
	}
	var rec *cli.Command
	for _, c := range app.Commands {
		if c.Name == "record" {
			rec = c
		}
	}
	takesValue := map[string]bool{}
	for _, f := range rec.Flags {
		df, ok := f.(cli.DocGenerationFlag)
		for _, n := range f.Names() {
			takesValue[n] = ok && df.TakesValue()
		}
	}
	out := slices.Clone(args)
	for i := 2; i < len(out); i++ {
		a := out[i]
		if a == "--" || !strings.HasPrefix(a, "-") || a == "-" {
			break
		}
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if name == "switch-output" && !hasValue {
			out[i] = "--switch-output=signal"
			continue
		}
		if takesValue[name] && !hasValue {
			i++ // its value
		}
	}
	return out
}

// windowFile names the window that closed at t: OUTPUT.YYYYMMDDhhmmssSSS.
func windowFile(out string, t time.Time) string {
	return fmt.Sprintf("%s.%s%03d", out, t.Format("20060102150405"), t.Nanosecond()/1e6)
}

// windowSummary is a window in --json-output's "windows".
type windowSummary struct {
	Output      string  `json:"output"`
	Start       string  `json:"start"`
	DurationSec float64 `json:"duration_s"`
	Samples     uint64  `json:"samples"`
	// Written is false when the file could not be written (the reason
	// in Error); Pushed, with --push, says whether the collector took it.
	Written bool   `json:"written"`
	Error   string `json:"error,omitempty"`
	Pushed  *bool  `json:"pushed,omitempty"`
	// Removed: deleted to keep --switch-max-files.
	Removed bool `json:"removed,omitempty"`
}

// windows writes the windows of a recording, and pushes them.
type windows struct {
	out  string
	kind format.Kind
	gz   bool
	max  int // --switch-max-files; 0: no limit
	// warn prints a line whatever -q says; info, nil with -q, the others.
	warn, info func(string)
	pusher     *windowPusher
	mu         sync.Mutex
	list       []*windowSummary
	kept       []string // files of this recording on disk, oldest first
	samples    uint64
}

// write writes window w (from record's goroutine), then hands it to the
// pusher.
func (ws *windows) write(w record.Window) {
	name := windowFile(ws.out, w.End)
	ws.mu.Lock()
	for slices.ContainsFunc(ws.list, func(s *windowSummary) bool { return s.Output == name }) {
		// Two windows closed within a millisecond.
		w.End = w.End.Add(time.Millisecond)
		name = windowFile(ws.out, w.End)
	}
	s := &windowSummary{Output: name, Start: w.Start.Format(time.RFC3339Nano), DurationSec: w.End.Sub(w.Start).Seconds(), Samples: w.Samples}
	ws.list = append(ws.list, s)
	ws.samples += w.Samples
	ws.mu.Unlock()

	err := writeWindowFile(name, w.Profile, ws.kind, ws.gz)
	ws.mu.Lock()
	if err != nil {
		s.Error = err.Error()
		what := "its samples are lost"
		if ws.pusher != nil {
			what = "it is still pushed"
		}
		ws.warn(fmt.Sprintf("gprof: window %s not written: %v; %s, and recording goes on", name, err, what))
	} else {
		s.Written = true
		ws.kept = append(ws.kept, name)
		for ws.max > 0 && len(ws.kept) > ws.max {
			old := ws.kept[0]
			ws.kept = ws.kept[1:]
			os.Remove(old)
			for _, o := range ws.list {
				if o.Output == old {
					o.Removed = true
				}
			}
		}
	}
	ws.mu.Unlock()
	if ws.pusher != nil {
		ws.pusher.add(s, w.Profile)
	}
}

// writeWindowFile writes p to path atomically, gzipped when the output's
// name asks for it (a window's name ends in its time, not .gz).
func writeWindowFile(path string, p *profile.Profile, kind format.Kind, gz bool) error {
	err := atomicfile.Write(path, func(w io.Writer) error {
		switch {
		case kind == format.Processed && gz:
			zw := gzip.NewWriter(w)
			if err := processed.Write(zw, p); err != nil {
				return err
			}
			return zw.Close()
		case kind == format.Processed:
			return processed.Write(w, p)
		case gz:
			return gecko.WriteGzip(w, p)
		}
		return gecko.Write(w, p)
	})
	if err != nil {
		msg := strings.TrimPrefix(err.Error(), path+": ")
		if errors.Is(err, syscall.ENOSPC) {
			msg = "no space left on device"
		}
		return errors.New(msg)
	}
	return nil
}

// windowPusher sends windows to the collector in order, on a goroutine of
// its own. It holds the newest window's profile in memory; older ones
// waiting to be sent are read back from their files.
type windowPusher struct {
	target     *pushTarget
	ctx        context.Context
	warn, info func(string) // as windows'
	mu         sync.Mutex
	queue      []pendingWindow
	kick       chan struct{}
	done       chan struct{}
	ended      bool
}

type pendingWindow struct {
	s *windowSummary
	p *profile.Profile // nil: read it back from s.Output
}

func newWindowPusher(ctx context.Context, t *pushTarget, warn, info func(string)) *windowPusher {
	wp := &windowPusher{target: t, ctx: ctx, warn: warn, info: info, kick: make(chan struct{}, 1), done: make(chan struct{})}
	go wp.run()
	return wp
}

// add queues a window to send.
func (wp *windowPusher) add(s *windowSummary, p *profile.Profile) {
	wp.mu.Lock()
	for i := range wp.queue {
		// Memory holds one window: the others wait on disk.
		if wp.queue[i].s.Written {
			wp.queue[i].p = nil
		}
	}
	wp.queue = append(wp.queue, pendingWindow{s, p})
	wp.mu.Unlock()
	select {
	case wp.kick <- struct{}{}:
	default:
	}
}

// finish sends what is left, once, and waits until that is done.
func (wp *windowPusher) finish() {
	wp.mu.Lock()
	wp.ended = true
	wp.mu.Unlock()
	select {
	case wp.kick <- struct{}{}:
	default:
	}
	<-wp.done
}

func (wp *windowPusher) run() {
	defer close(wp.done)
	for range wp.kick {
		// Oldest first; at the first failure, the rest waits for the
		// next window (the collector is likely down for all of them).
		for {
			wp.mu.Lock()
			if len(wp.queue) == 0 {
				break
			}
			next := wp.queue[0]
			wp.mu.Unlock()
			if !wp.send(next) {
				wp.mu.Lock()
				break
			}
			wp.mu.Lock()
			wp.queue = wp.queue[1:]
			wp.mu.Unlock()
		}
		ended := wp.ended
		wp.mu.Unlock()
		if ended {
			return
		}
	}
}

// send pushes one window, and reports whether it is done with (sent, or
// gone from the disk).
func (wp *windowPusher) send(w pendingWindow) bool {
	p := w.p
	if p == nil {
		if w.s.Removed {
			wp.warn(fmt.Sprintf("gprof: window %s was removed (--switch-max-files) before it could be pushed", w.s.Output))
			return true
		}
		var err error
		if p, _, err = format.File(w.s.Output); err != nil {
			wp.warn(fmt.Sprintf("gprof: window %s cannot be pushed: %v", w.s.Output, err))
			return true
		}
	}
	_, err := wp.target.sendProfile(wp.ctx, p, wp.info)
	ok := err == nil
	w.s.Pushed = &ok
	if err != nil {
		where := "it is kept on disk and pushed again with the next window"
		if !w.s.Written {
			where = "it could not be written either: its samples are lost"
		}
		wp.warn(fmt.Sprintf("gprof: window %s not pushed: %v; %s", w.s.Output, err, where))
		return !w.s.Written
	}
	if wp.info != nil {
		wp.info(fmt.Sprintf("gprof: pushed window %s to %s", w.s.Output, wp.target.send.URL))
	}
	return true
}

// unsent lists the windows on disk that were not pushed.
func (wp *windowPusher) unsent() []string {
	wp.mu.Lock()
	defer wp.mu.Unlock()
	var out []string
	for _, w := range wp.queue {
		if w.s.Written && !w.s.Removed {
			out = append(out, w.s.Output)
		}
	}
	return out
}
