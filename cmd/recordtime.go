package cmd

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/gprof-dev/gprof/attach"
	"github.com/gprof-dev/gprof/format"
	"github.com/gprof-dev/gprof/record"
)

// recordTime wires record's control in time: -D/--delay and --control
// (control.go), --switch-output and --switch-max-files (window.go). A
// recording with none of them has none of this.
type recordTime struct {
	ctl     *attach.Control
	cc      *controlChannel
	win     *windows // nil without --switch-output
	cuts    chan chan struct{}
	usr2    chan os.Signal
	ctlDone chan struct{}
	// warn prints a line whatever -q says; info, nil with -q, the others.
	warn, info func(string)
}

// recordTimeFlags are the flags of record's control in time.
func recordTimeFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "delay", Aliases: []string{"D"}, Usage: "start sampling `MS` milliseconds after the command starts (perf's -D): nothing before is sampled, and the command runs meanwhile; -1 starts with sampling off until --control enables it"},
		&cli.StringFlag{Name: "control", Usage: "read perf's control commands (enable, disable, ping, snapshot, stop; one a line) from `fifo:CTL[,ACK]` (FIFOs made with mkfifo) or fd:CTL[,ACK] (inherited descriptors), answering each \"ack\" on ACK, as perf record --control does: a harness written for perf drives gprof unchanged"},
		&cli.StringFlag{Name: "switch-output", Usage: "write the recording in windows, each a complete profile OUTPUT.YYYYMMDDhhmmssSSS, closed on SIGUSR2 (`signal`, the default when given alone), every TIME (30s, 5m, 1h) or every SIZE of profile data (100M); memory holds one window; with --push each is sent as it closes"},
		&cli.IntFlag{Name: "switch-max-files", Usage: "with --switch-output, keep only the newest `N` window files, removing older ones (default: keep all)"},
	}
}

// setupRecordTime checks the flags of record's control in time and opens
// what they name, before the recording starts; nil when none is given.
// It sets opts.Attach.Control and opts.Windows.
func setupRecordTime(c *cli.Context, opts *record.Options, out string, kind format.Kind, target *pushTarget, quiet bool, say func(string)) (*recordTime, error) {
	if !c.IsSet("delay") && !c.IsSet("control") && !c.IsSet("switch-output") && !c.IsSet("switch-max-files") {
		return nil, nil
	}
	rt := &recordTime{}
	delay, err := parseDelay(c.String("delay"))
	if err != nil {
		return nil, err
	}
	var so switchOutput
	if c.IsSet("switch-output") {
		if so, err = parseSwitchOutput(c.String("switch-output")); err != nil {
			return nil, err
		}
		if out == "-" {
			return nil, usagef("--switch-output writes files named after --output: give -o FILE, not -o -")
		}
	} else if c.IsSet("switch-max-files") {
		return nil, usagef("--switch-max-files goes with --switch-output")
	}
	if n := c.Int("switch-max-files"); n < 0 {
		return nil, usagef("--switch-max-files must be a positive number of files")
	}
	spec := c.String("control")
	if delay < 0 && spec == "" {
		return nil, usagef("-D -1 starts with sampling off until a control command enables it: give --control fifo:CTL[,ACK] too")
	}
	if delay != 0 || spec != "" {
		rt.ctl = attach.NewControl(delay)
		opts.Attach.Control = rt.ctl
	}
	if spec != "" {
		if rt.cc, err = openControl(spec); err != nil {
			return nil, err
		}
	}
	info := say
	if quiet {
		info = nil
	}
	warn := say
	rt.warn, rt.info = warn, info
	if c.IsSet("switch-output") {
		rt.win = &windows{out: out, kind: kind, gz: strings.HasSuffix(strings.ToLower(out), ".gz"), max: c.Int("switch-max-files"),
			warn: warn, info: info}
		if target != nil {
			rt.win.pusher = newWindowPusher(c.Context, target, warn, info)
		}
		rt.cuts = make(chan chan struct{}, 1)
		opts.Windows = &record.Windows{Every: so.every, Size: so.size, Cut: rt.cuts, Write: rt.win.write}
		// SIGUSR2 closes a window whatever closes the others, as perf's.
		if len(windowSignals) > 0 {
			rt.usr2 = make(chan os.Signal, 1)
			signal.Notify(rt.usr2, windowSignals...)
		}
	} else if rt.cc != nil {
		// "snapshot" writes the profile so far to the output.
		rt.cuts = make(chan chan struct{}, 1)
		opts.Windows = &record.Windows{Keep: true, Cut: rt.cuts, Write: func(w record.Window) {
			if err := writeProfile(out, w.Profile, kind); err != nil {
				warn(fmt.Sprintf("gprof: --control snapshot: %v", err))
			} else if info != nil {
				info(fmt.Sprintf("gprof: wrote the profile so far to %s (--control snapshot)", outName(out)))
			}
		}}
	}
	return rt, nil
}

// start serves the control channel and SIGUSR2 while the recording runs;
// stop ends the recording.
func (rt *recordTime) start(stop func()) {
	if rt == nil {
		return
	}
	if rt.usr2 != nil {
		go func() {
			for range rt.usr2 {
				select {
				case rt.cuts <- nil:
				default: // one is due already
				}
			}
		}()
	}
	if rt.cc != nil {
		var snapshot func()
		if rt.cuts != nil {
			snapshot = func() {
				written := make(chan struct{})
				rt.cuts <- written
				<-written
			}
		}
		rt.ctlDone = make(chan struct{})
		go func() {
			defer close(rt.ctlDone)
			rt.cc.serve(rt.ctl, stop, snapshot, rt.warn, rt.info)
		}()
	}
}

// end stops serving, once the recording is over.
func (rt *recordTime) end() {
	if rt == nil {
		return
	}
	if rt.ctl != nil {
		rt.ctl.Ended()
	}
	if rt.usr2 != nil {
		signal.Stop(rt.usr2)
		close(rt.usr2)
	}
	if rt.cc != nil {
		rt.cc.close()
	}
}

// neverEnabled says, for a recording with sampling off from the start,
// that nothing turned it on: a one-line note, "" otherwise.
func (rt *recordTime) neverEnabled() string {
	if rt == nil || rt.ctl == nil || rt.ctl.StartsOn() || len(rt.ctl.Log()) > 0 {
		return ""
	}
	if rt.cc != nil {
		return fmt.Sprintf("sampling was never turned on: nothing wrote \"enable\" to --control %s", rt.cc.spec)
	}
	return "sampling was never turned on: the recording ended before the -D delay"
}

// finishWindows ends a recording in windows: its last window, what Run
// returned, is written and what is left to push is sent; then the
// summary. Exit codes: as for one profile, and 1 when a window could be
// neither written nor pushed; 5 when windows on disk were not pushed.
func finishWindows(c *cli.Context, rt *recordTime, res *record.Result, stopped bool, jsonOut string, quiet bool, ph *phases, opts record.Options) error {
	ws := rt.win
	p := res.Profile
	w := record.Window{Profile: p, Start: p.Meta.StartTime, End: p.Meta.StartTime.Add(time.Duration(p.Meta.Duration))}
	for _, pr := range p.Processes {
		for _, th := range pr.Threads {
			w.Samples += uint64(th.Samples.Len())
		}
	}
	if !w.Empty() || len(ws.list) == 0 {
		// (A last window with no thread, the targets having exited
		// before it, is not written; unless it is the only one.)
		ph.set("writing the last window")
		ws.write(w)
		ph.done()
	}
	var unsent []string
	if ws.pusher != nil {
		ws.pusher.finish()
		unsent = ws.pusher.unsent()
	}
	for _, n := range append(res.RejectedDebugFiles, remoteNotes(opts.Remote)...) {
		opts.Attach.Notice(n)
	}
	var lost []string
	for _, s := range ws.list {
		if !s.Written && (s.Pushed == nil || !*s.Pushed) {
			lost = append(lost, s.Output)
		}
	}
	sum := summaryOf(res, ws.list[len(ws.list)-1].Output, opts)
	sum.Samples, sum.Windows = ws.samples, ws.list
	if ws.pusher != nil {
		ok := len(unsent) == 0 && len(lost) == 0
		sum.Pushed = &ok
	}
	if !quiet {
		printWindowsSummary(os.Stderr, sum)
	}
	if jsonOut != "" {
		if err := writeJSONOutput(jsonOut, encodeJSON(sum)); err != nil {
			return fmt.Errorf("write %s: %v", jsonOut, err)
		}
	}
	if len(unsent) > 0 {
		fmt.Fprintf(os.Stderr, "%s %s not pushed; push %s later with 'gprof push --endpoint %s %s'\n", errorPrefix(os.Stderr),
			plural(len(unsent), "window"), map[bool]string{true: "it", false: "them"}[len(unsent) == 1], c.String("push"), strings.Join(unsent, " "))
		return exitCodeError{ExitPushFailed}
	}
	if len(lost) > 0 {
		return fmt.Errorf("%d of %s could not be written (%s): their samples are lost", len(lost), plural(len(ws.list), "window"), strings.Join(lost, ", "))
	}
	if res.ExitCode > 0 && !stopped {
		return exitCodeError{ExitCommandFailed}
	}
	return nil
}

// printWindowsSummary is printRecordSummary for a recording in windows.
func printWindowsSummary(w io.Writer, s recordSummary) {
	written := 0
	for _, x := range s.Windows {
		if x.Written && !x.Removed {
			written++
		}
	}
	fmt.Fprintf(w, "gprof: wrote %s (%d on disk, the last %s): %s over %.2fs", plural(len(s.Windows), "window"), written,
		outName(s.Output), plural(int(s.Samples), "sample"), s.DurationSec)
	if s.Lost > 0 {
		fmt.Fprintf(w, ", %d events LOST", s.Lost)
	}
	fmt.Fprintln(w)
	if s.ExitCode != nil && *s.ExitCode != 0 {
		fmt.Fprintf(w, "gprof: the command exited with status %d\n", *s.ExitCode)
	}
}
