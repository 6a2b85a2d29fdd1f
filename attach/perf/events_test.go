//go:build linux

package perf

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/gprof-dev/gprof/attach"
	"github.com/gprof-dev/gprof/perfrecord"
)

var testEnv = &eventEnv{interval: time.Millisecond, rate: 1000}

func resolveOne(t *testing.T, spec string) *perfEvent {
	t.Helper()
	specs, err := attach.ParseEvents(spec)
	if err != nil {
		t.Fatal(err)
	}
	ev, err := resolveEvent(specs[0], testEnv)
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

// TestHardwareAttrs: the attrs of hardware events, as a machine with a PMU
// takes them (this one may have none: the attrs are built all the same),
// and of the other counters.
func TestEventAttrs(t *testing.T) {
	for _, c := range []struct {
		spec         string
		typ          uint32
		config       uint64
		sample       uint64
		freq, exUser bool
		exKernel     bool
		time         bool
	}{
		{"cycles", perfrecord.TypeHardware, 0, 1000, true, false, false, false},
		{"instructions/period=100000/", perfrecord.TypeHardware, 1, 100000, false, false, false, false},
		{"cache-misses:u", perfrecord.TypeHardware, 3, 1000, true, false, true, false},
		{"branch-misses/freq=4000/", perfrecord.TypeHardware, 5, 4000, true, false, false, false},
		{"cpu-clock", perfrecord.TypeSoftware, 0, 1e6, false, false, false, true},
		{"task-clock/freq=999/", perfrecord.TypeSoftware, 1, 999, true, false, false, true},
		{"page-faults", perfrecord.TypeSoftware, 2, 1000, true, false, false, false},
		{"context-switches/period=1/:k", perfrecord.TypeSoftware, 3, 1, false, true, false, false},
	} {
		ev := resolveOne(t, c.spec)
		a := ev.attr
		if a.Type != c.typ || a.Config != c.config || a.Sample != c.sample || (a.Bits&unix.PerfBitFreq != 0) != c.freq ||
			(a.Bits&unix.PerfBitExcludeUser != 0) != c.exUser || (a.Bits&unix.PerfBitExcludeKernel != 0) != c.exKernel || ev.format.PeriodIsTime != c.time {
			t.Errorf("%s: type %d config %d sample %d bits %#x time %v", c.spec, a.Type, a.Config, a.Sample, a.Bits, ev.format.PeriodIsTime)
		}
	}
}

// fakeSysfs points tracefs and the PMU directory at a tree of the test's.
func fakeSysfs(t *testing.T) (tracing, pmus string) {
	t.Helper()
	dir := t.TempDir()
	tracing, pmus = filepath.Join(dir, "tracing"), filepath.Join(dir, "devices")
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(tracing, "events", "sched", "sched_switch"), 0o755))
	format, err := os.ReadFile(filepath.Join("..", "..", "perfrecord", "testdata", "sched_switch.format"))
	must(err)
	must(os.WriteFile(filepath.Join(tracing, "events", "sched", "sched_switch", "format"), format, 0o644))
	for name, typ := range map[string]string{"kprobe": "6", "uprobe": "7"} {
		must(os.MkdirAll(filepath.Join(pmus, name), 0o755))
		must(os.WriteFile(filepath.Join(pmus, name, "type"), []byte(typ+"\n"), 0o644))
	}
	oldRoots, oldPMU := tracefsRoots, pmuDir
	tracefsRoots, pmuDir = []string{tracing}, pmus
	t.Cleanup(func() { tracefsRoots, pmuDir = oldRoots, oldPMU })
	return tracing, pmus
}

// cString is the C string config1 points to: the event's own, which it
// keeps alive.
func cString(ev *perfEvent) string {
	if len(ev.cstr) == 0 || ev.attr.Ext1 != uint64(uintptr(unsafe.Pointer(&ev.cstr[0]))) {
		return "(config1 points elsewhere)"
	}
	return strings.TrimSuffix(string(ev.cstr), "\x00")
}

// TestProbeAttrs: probes through the kprobe and uprobe PMUs, whose attrs
// carry the function or binary (config1) and the offset (config2), and a
// tracepoint by its id, with its format.
func TestProbeAttrs(t *testing.T) {
	fakeSysfs(t)
	k := resolveOne(t, "probe:do_sys_openat2__return")
	if k.attr.Type != 6 || k.attr.Config&probeRetprobe == 0 || cString(k) != "do_sys_openat2" || !k.pmu || k.format.Trace == nil {
		t.Errorf("kprobe attr %+v", k.attr)
	}
	tp := resolveOne(t, "sched:sched_switch")
	if tp.attr.Type != perfrecord.TypeTracepoint || tp.attr.Config == 0 || tp.attr.Sample != 1 || tp.format.Trace == nil || tp.format.Trace.Name != "sched:sched_switch" {
		t.Errorf("tracepoint attr %+v, format %+v", tp.attr, tp.format.Trace)
	}
	// No kprobe PMU: one line saying so.
	os.RemoveAll(filepath.Join(pmuDir, "kprobe"))
	specs, _ := attach.ParseEvents("probe:vfs_read")
	if _, err := resolveEvent(specs[0], testEnv); err == nil || !strings.Contains(err.Error(), "no kprobe PMU") {
		t.Errorf("no kprobe PMU: %v", err)
	}
	// No tracefs: one line saying what to mount.
	tracefsRoots = []string{filepath.Join(t.TempDir(), "none")}
	specs, _ = attach.ParseEvents("sched:sched_switch")
	if _, err := resolveEvent(specs[0], testEnv); err == nil || !strings.Contains(err.Error(), "mount -t tracefs") {
		t.Errorf("no tracefs: %v", err)
	}
	// A uprobe on a function of libc, found by perf probe's name for it.
	spec, err := attach.ParseProbe("libc:malloc")
	if err != nil {
		t.Fatal(err)
	}
	u, err := resolveEvent(spec, testEnv)
	if err != nil {
		t.Skipf("no libc to probe here: %v", err)
	}
	if u.attr.Type != 7 || !strings.Contains(cString(u), "/libc") || u.attr.Ext2 == 0 || u.attr.Config != 0 || !u.pmu {
		t.Errorf("uprobe attr %+v (%s)", u.attr, cString(u))
	}
	spec.Symbol = "no_such_function"
	if _, err := resolveEvent(spec, testEnv); err == nil || !strings.Contains(err.Error(), "no function no_such_function") {
		t.Errorf("missing function: %v", err)
	}
}
