package cmd

import (
	"bytes"
	"net"
	"runtime"
	"strings"
	"testing"

	"github.com/gprof-dev/gprof/view"
)

func TestAnnounce(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the display check is Linux's")
	}
	addr := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 3005}
	urls := view.MakeURLs(addr, "tok", view.DefaultProfilerURL)

	// No display (an ssh session): the URL on stdout, a port-forward hint.
	t.Setenv("DISPLAY", "")
	t.Setenv("WAYLAND_DISPLAY", "")
	var out, errw bytes.Buffer
	announce(&out, &errw, "p.json", addr, urls, viewOptions{})
	if out.String() != urls.Open+"\n" {
		t.Errorf("stdout = %q, want the URL alone", out.String())
	}
	if !strings.Contains(errw.String(), "ssh -L 3005:127.0.0.1:3005 ") || !strings.Contains(errw.String(), "Ctrl-C") {
		t.Errorf("stderr lacks the ssh hint or how to stop:\n%s", errw.String())
	}

	// --no-open with a display: the URL, no hint, no browser.
	t.Setenv("DISPLAY", ":0")
	out.Reset()
	errw.Reset()
	announce(&out, &errw, "p.json", addr, urls, viewOptions{noOpen: true})
	if out.String() != urls.Open+"\n" || strings.Contains(errw.String(), "ssh") || strings.Contains(errw.String(), "opened") {
		t.Errorf("--no-open: stdout %q, stderr %q", out.String(), errw.String())
	}

	// A reachable address is warned about.
	out.Reset()
	errw.Reset()
	announce(&out, &errw, "p.json", &net.TCPAddr{IP: net.IPv4zero, Port: 3005}, urls, viewOptions{noOpen: true})
	if !strings.Contains(errw.String(), "warning") {
		t.Errorf("no warning for 0.0.0.0: %q", errw.String())
	}
}
