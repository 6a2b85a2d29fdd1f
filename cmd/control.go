package cmd

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/gprof-dev/gprof/attach"
)

// record -D/--delay and --control: perf record's way of profiling only part
// of a run. -D MS starts sampling MS milliseconds after the command starts
// (-1: not until a control command says so); --control fifo:CTL[,ACK] or
// fd:CTL[,ACK] reads perf's commands, one a line, and answers each known
// one "ack\n" on ACK when given, exactly as perf does, so that a harness
// written for perf (pyperf's perf_record hook, php-src's and scylladb's
// benchmark scripts) drives gprof unchanged:
//
//	enable    turn sampling on
//	disable   turn sampling off
//	ping      nothing; just the ack
//	snapshot  write the window so far (--switch-output), or the profile
//	          so far to --output, and go on recording
//	stop      end the recording, as Ctrl-C would
//
// The ack of enable and disable comes once sampling is on or off; that of
// snapshot once the file is written. Like perf, an unknown command gets no
// ack; gprof says so on stderr.

// controlCommands are the commands --control knows.
var controlCommands = []string{"enable", "disable", "ping", "snapshot", "stop"}

// controlChannel is an open --control: where commands come from and acks go.
type controlChannel struct {
	spec string   // as given, for messages
	ctl  *os.File // read
	ack  *os.File // written; nil without ACK
}

// parseDelay reads -D/--delay: milliseconds, or -1.
func parseDelay(s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil || n < -1 || n > int64(maxSeconds/time.Millisecond) {
		return 0, usagef("invalid -D/--delay %q: give milliseconds to wait after the command starts before sampling, or -1 to start with sampling off until --control enables it", s)
	}
	if n < 0 {
		return -1, nil
	}
	return time.Duration(n) * time.Millisecond, nil
}

// openControl opens the --control channel spec names: fifo:CTL[,ACK] (FIFOs
// that must exist, as mkfifo makes them) or fd:CTL[,ACK] (descriptors
// gprof inherited).
func openControl(spec string) (*controlChannel, error) {
	kind, rest, ok := strings.Cut(spec, ":")
	ctl, ack, _ := strings.Cut(rest, ",")
	if !ok || ctl == "" || strings.Contains(ack, ",") || (kind != "fifo" && kind != "fd") {
		return nil, usagef("invalid --control %q: use fifo:CTL[,ACK] (FIFOs made with mkfifo) or fd:CTL[,ACK] (inherited file descriptors), as perf record takes", spec)
	}
	cc := &controlChannel{spec: spec}
	var err error
	if kind == "fifo" {
		// Read and write, as perf opens it: neither end waits for the
		// other, and the harness may open and close its end as often as
		// it likes without gprof seeing an end of file.
		if cc.ctl, err = openFIFO(spec, ctl); err != nil {
			return nil, err
		}
		if ack != "" {
			if cc.ack, err = openFIFO(spec, ack); err != nil {
				cc.ctl.Close()
				return nil, err
			}
		}
		return cc, nil
	}
	if cc.ctl, err = inheritedFD(spec, ctl, "read"); err != nil {
		return nil, err
	}
	if ack != "" {
		if cc.ack, err = inheritedFD(spec, ack, "write"); err != nil {
			cc.ctl.Close()
			return nil, err
		}
	}
	return cc, nil
}

// openFIFO opens FIFO path, read and write, without waiting for its other
// end.
func openFIFO(spec, path string) (*os.File, error) {
	st, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, usagef("--control %s: %s does not exist: make it first with 'mkfifo %s'", spec, path, path)
	case err != nil:
		return nil, usagef("--control %s: %v", spec, err)
	case st.Mode()&fs.ModeNamedPipe == 0:
		return nil, usagef("--control %s: %s is not a FIFO: make one with 'mkfifo'", spec, path)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, usagef("--control %s: cannot open %s: %v", spec, path, errors.Unwrap(err))
	}
	return f, nil
}

// inheritedFD is file descriptor s, which gprof must have inherited open
// for how ("read" or "write").
func inheritedFD(spec, s, how string) (*os.File, error) {
	fd, err := strconv.Atoi(s)
	if err != nil || fd < 0 {
		return nil, usagef("invalid --control %s: %q is not a file descriptor number", spec, s)
	}
	f, err := openInherited(fd, how)
	if err != nil {
		return nil, usagef("--control %s: file descriptor %d is not open for %s in gprof (%v): the caller must pass it open, e.g. 'exec %d<>ctl.fifo' in the shell", spec, fd, how, err, fd)
	}
	return f, nil
}

// serve reads commands until the channel closes or the recording ends,
// and carries them out: ctl turns sampling on and off, stop ends the
// recording, snapshot writes what was recorded so far (and returns once
// it is written; nil when there is nothing to write it with). warn prints
// a line for the user whatever -q says, info (nil with -q) the others.
func (cc *controlChannel) serve(ctl *attach.Control, stop func(), snapshot func(), warn, info func(string)) {
	sc := bufio.NewScanner(cc.ctl)
	for sc.Scan() {
		cmd := strings.TrimSpace(sc.Text())
		switch cmd {
		case "":
			continue
		case "enable", "disable":
			on := cmd == "enable"
			if !ctl.Set(on) {
				warn(fmt.Sprintf("gprof: --control: %s came after the recording ended", cmd))
				cc.reply()
				continue
			}
			if info != nil {
				info("gprof: sampling " + cmd + "d (--control)")
			}
		case "ping":
		case "snapshot":
			if snapshot != nil {
				snapshot()
			}
		case "stop":
			cc.reply()
			stop()
			continue
		default:
			// As perf: no ack, which a harness waiting for one would
			// take for a success.
			warn(fmt.Sprintf("gprof: --control: unknown command %q ignored, and not acknowledged, as perf does (known: %s)", oneLineText(cmd), strings.Join(controlCommands, ", ")))
			continue
		}
		cc.reply()
	}
	if err := sc.Err(); err != nil && !errors.Is(err, os.ErrClosed) && !errors.Is(err, io.EOF) {
		warn(fmt.Sprintf("gprof: --control %s: stopped reading commands: %v", cc.spec, err))
	}
}

// reply writes the ack of a command, if there is an ACK.
func (cc *controlChannel) reply() {
	if cc.ack != nil {
		cc.ack.Write([]byte("ack\n"))
	}
}

// close stops serve and closes the channel.
func (cc *controlChannel) close() {
	cc.ctl.Close()
	if cc.ack != nil {
		cc.ack.Close()
	}
}

// oneLineText shortens a command for a message.
func oneLineText(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}
