//go:build linux

package perf

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/gprof-dev/gprof/attach"
	"github.com/gprof-dev/gprof/attach/internal/proc"
	"github.com/gprof-dev/gprof/objfile"
	"github.com/gprof-dev/gprof/perfrecord"
)

// Events beyond CPU time. Each event a recording asks for
// (attach.Options.Events) is opened on every task and CPU the first one
// is, writing into the same ring (PERF_EVENT_IOC_SET_OUTPUT), with the
// same sample layout, so that one decoder reads them all; the id the
// kernel gives each file (PERF_EVENT_IOC_ID) tells whose a sample is. The
// first event also reports the mappings, names and tasks; the others
// sample only.
//
// Tracepoints are named by their id in tracefs (events/SYSTEM/NAME/id),
// and their samples carry the hit's fields (PERF_SAMPLE_RAW), laid out as
// the format file beside the id says. Probes are made for the recording
// through the kernel's kprobe and uprobe PMUs
// (/sys/bus/event_source/devices/{kprobe,uprobe}), which take the
// function or the binary and offset in the attr itself: the probe exists
// as long as its files are open and goes with them, so nothing is left in
// tracefs, however gprof ends. A USDT probe is a uprobe at the place its
// note gives, with the kernel counting its semaphore (ref_ctr_offset)
// while it is enabled.

// perfEvent is one event of a session, resolved into what opens it.
type perfEvent struct {
	spec attach.EventSpec
	// attr holds what is the event's own: type, config (and config1,
	// config2 for a probe), period or frequency, and the modes it
	// excludes. The session's sample layout and side-band bits are added
	// when it is opened.
	attr   unix.PerfEventAttr
	format perfrecord.EventFormat
	// cstr is the C string a probe's attr points to (config1): kept
	// here so that it lives as long as the attr is used.
	cstr []byte
	// pmu says the event is a probe made through a probe PMU. Such an
	// event cannot be inherited: the kernel reads the string config1
	// points to again for each thread a target creates, in that
	// thread's memory, where it is not. So it is opened per CPU for
	// every task instead, its samples kept by the targets they are of
	// (see openProbes).
	pmu bool
}

// Where the kernel describes its events. Variables so that tests can
// point them at a tree of their own.
var (
	tracefsRoots = []string{"/sys/kernel/tracing", "/sys/kernel/debug/tracing"}
	pmuDir       = "/sys/bus/event_source/devices"
)

// tracefsMountHint is the one line that says how to make tracepoints
// available where tracefs is not mounted.
const tracefsMountHint = "tracefs is not mounted: mount it (as root) with `mount -t tracefs nodev /sys/kernel/tracing`"

// tracefs returns the root of the mounted tracefs, "" when none is. A
// root this user may not look into counts as mounted (tracefs is root's
// alone, mode 700, by default): reading its files then says what to grant,
// where "not mounted" would send a user to mount it again.
func tracefs() string {
	for _, r := range tracefsRoots {
		st, err := os.Stat(filepath.Join(r, "events"))
		if err == nil && st.IsDir() || errors.Is(err, os.ErrPermission) {
			return r
		}
	}
	return ""
}

// defaultEvent is the one event of a recording that names none: the clock
// Options.Event says.
func defaultEvent(name string) (attach.EventSpec, error) {
	switch name {
	case "", "cpu-clock":
		return attach.EventSpec{Name: "cpu-clock", Kind: attach.KindClock, Config: perfrecord.CountSWCPUClock}, nil
	case "task-clock":
		return attach.EventSpec{Name: "task-clock", Kind: attach.KindClock, Config: perfrecord.CountSWTaskClock}, nil
	case "cycles":
		return attach.EventSpec{Name: "cycles", Kind: attach.KindHardware, Config: perfrecord.CountHWCPUCycles}, nil
	}
	return attach.EventSpec{}, fmt.Errorf("unknown event %q (want cpu-clock, task-clock or cycles)", name)
}

// eventEnv is what resolving an event needs of the machine and targets.
type eventEnv struct {
	interval time.Duration
	rate     int
	// command is the launched command's argv and environment; pids the
	// processes attached to: where a probe's binary is looked for.
	command []string
	env     []string
	pids    []int
}

// resolveEvent makes the perfEvent of spec.
func resolveEvent(spec attach.EventSpec, env *eventEnv) (*perfEvent, error) {
	ev := &perfEvent{spec: spec}
	a := &ev.attr
	switch spec.Kind {
	case attach.KindClock:
		a.Type, a.Config = perfrecord.TypeSoftware, spec.Config
		ev.format.PeriodIsTime = true
	case attach.KindSoftware:
		a.Type, a.Config = perfrecord.TypeSoftware, spec.Config
	case attach.KindHardware:
		a.Type, a.Config = perfrecord.TypeHardware, spec.Config
	case attach.KindTracepoint:
		if err := ev.tracepoint(); err != nil {
			return nil, err
		}
	case attach.KindKprobe:
		if ok, err := ev.madeByPerfProbe(); ok || err != nil {
			return ev, err
		}
		if err := ev.kprobe(); err != nil {
			return nil, err
		}
	case attach.KindUprobe, attach.KindUSDT:
		if ok, err := ev.madeByPerfProbe(); ok || err != nil {
			return ev, err
		}
		if err := ev.uprobe(env); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("event %s: unknown kind", spec.Name)
	}
	ev.sampling(env)
	return ev, nil
}

// sampling sets how often the event samples: its own period or frequency,
// else a clock's interval, every hit of a tracepoint or probe (perf's
// default for them), or the rate's frequency for another counter.
func (ev *perfEvent) sampling(env *eventEnv) {
	a, spec := &ev.attr, &ev.spec
	switch {
	case spec.Freq > 0:
		a.Sample = spec.Freq
		a.Bits |= unix.PerfBitFreq
	case spec.Period > 0:
		a.Sample = spec.Period
	case spec.Kind == attach.KindClock:
		a.Sample = uint64(env.interval)
	case spec.Traced():
		a.Sample = 1
	default:
		a.Sample = uint64(env.rate)
		a.Bits |= unix.PerfBitFreq
	}
	if a.Bits&unix.PerfBitFreq == 0 {
		ev.format.Period = a.Sample
	}
	if spec.User {
		a.Bits |= unix.PerfBitExcludeKernel
	}
	if spec.Kernel {
		a.Bits |= unix.PerfBitExcludeUser
	}
}

// tracepoint reads the tracepoint's id and format from tracefs.
func (ev *perfEvent) tracepoint() error {
	name := ev.spec.Name
	root := tracefs()
	if root == "" {
		return fmt.Errorf("tracepoint %s: %s", name, tracefsMountHint)
	}
	sys, n, _ := strings.Cut(name, ":")
	dir := filepath.Join(root, "events", sys, n)
	text, err := os.ReadFile(filepath.Join(dir, "format"))
	if err != nil {
		switch {
		case errors.Is(err, os.ErrPermission):
			return fmt.Errorf("tracepoint %s: %s is readable by root only: run gprof as root, or let others read tracefs with `mount -o remount,mode=755 %s`: %w", name, root, root, attach.ErrPermission)
		case errors.Is(err, os.ErrNotExist):
			return fmt.Errorf("unknown tracepoint %s: there is no %s (the tracepoints are listed in %s)", name, dir, filepath.Join(root, "available_events"))
		}
		return fmt.Errorf("tracepoint %s: %w", name, err)
	}
	f, err := perfrecord.ParseTraceFormat(text)
	if err != nil {
		return fmt.Errorf("tracepoint %s: %s: %w", name, dir, err)
	}
	if f.ID == 0 {
		return fmt.Errorf("tracepoint %s: its format in %s has no ID", name, dir)
	}
	f.Name = name
	ev.attr.Type, ev.attr.Config = perfrecord.TypeTracepoint, f.ID
	ev.format.Trace = f
	return nil
}

// madeByPerfProbe makes a probe event a tracepoint when perf probe made
// it already (it is then in tracefs under its name), and reports whether
// it did.
func (ev *perfEvent) madeByPerfProbe() (bool, error) {
	root := tracefs()
	if root == "" {
		return false, nil
	}
	sys, n, _ := strings.Cut(ev.spec.Name, ":")
	if _, err := os.Stat(filepath.Join(root, "events", sys, n, "format")); err != nil {
		return false, nil
	}
	return true, ev.tracepoint()
}

// pmuType reads the type number of the dynamic PMU name ("kprobe",
// "uprobe"), and false when the kernel has none.
func pmuType(name string) (uint32, bool) {
	b, err := os.ReadFile(filepath.Join(pmuDir, name, "type"))
	if err != nil {
		return 0, false
	}
	n, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 32)
	return uint32(n), err == nil
}

// Bits of a probe PMU's config (its format directory says so:
// retprobe is config:0, ref_ctr_offset config:32-63).
const (
	probeRetprobe     = 1 << 0
	probeRefCtrOffset = 32
)

// kprobe makes the attr of a probe on a kernel function.
func (ev *perfEvent) kprobe() error {
	typ, ok := pmuType("kprobe")
	if !ok {
		return fmt.Errorf("probe %s: this kernel cannot probe its functions: it has no kprobe PMU (%s; it needs CONFIG_KPROBE_EVENTS and Linux 4.17 or later)", ev.spec.Name, filepath.Join(pmuDir, "kprobe"))
	}
	ev.cstr = append([]byte(ev.spec.Symbol), 0)
	ev.pmu = true
	a := &ev.attr
	a.Type = typ
	a.Ext1 = uint64(uintptr(unsafe.Pointer(&ev.cstr[0]))) // kprobe_func
	a.Ext2 = ev.spec.Offset                               // probe_offset
	if ev.spec.Return {
		a.Config |= probeRetprobe
	}
	ev.format.Trace = perfrecord.ProbeFormat(ev.spec.Name, ev.spec.Return)
	return nil
}

// uprobe makes the attr of a probe on a function of a binary, or at a
// USDT probe's place.
func (ev *perfEvent) uprobe(env *eventEnv) error {
	spec := &ev.spec
	typ, ok := pmuType("uprobe")
	if !ok {
		return fmt.Errorf("probe %s: this kernel cannot probe programs: it has no uprobe PMU (%s; it needs CONFIG_UPROBE_EVENTS and Linux 4.17 or later)", spec.Name, filepath.Join(pmuDir, "uprobe"))
	}
	bin, err := findProbeBinary(spec, env)
	if err != nil {
		return err
	}
	f, err := objfile.Open(bin)
	if err != nil {
		return fmt.Errorf("probe %s: cannot read %s: %w", spec.Name, bin, err)
	}
	defer f.Close()
	var off, refCtr uint64
	if spec.Kind == attach.KindUSDT {
		off, refCtr, err = usdtPlace(f, spec)
	} else {
		off, err = functionPlace(f, spec)
	}
	if err != nil {
		return err
	}
	ev.cstr = append([]byte(bin), 0)
	ev.pmu = true
	a := &ev.attr
	a.Type = typ
	a.Ext1 = uint64(uintptr(unsafe.Pointer(&ev.cstr[0]))) // uprobe_path
	a.Ext2 = off                                          // probe_offset
	a.Config = refCtr << probeRefCtrOffset
	if spec.Return {
		a.Config |= probeRetprobe
	}
	ev.spec.Binary = bin
	ev.format.Trace = perfrecord.ProbeFormat(spec.Name, spec.Return)
	return nil
}

// functionPlace returns the file offset of the probed place of a
// function of f.
func functionPlace(f *objfile.File, spec *attach.EventSpec) (uint64, error) {
	syms, err := f.SymbolTable()
	if err != nil {
		return 0, fmt.Errorf("probe %s: cannot read the symbols of %s: %w", spec.Name, f.Path(), err)
	}
	i := slices.IndexFunc(syms, func(s objfile.Symbol) bool { return s.Name == spec.Symbol })
	if i < 0 {
		return 0, fmt.Errorf("probe %s: %s has no function %s (see its functions with `nm -D --defined-only %s`, or `nm` for a binary with its symbol table)", spec.Name, f.Path(), spec.Symbol, f.Path())
	}
	off, ok := f.FileOffset(syms[i].Addr + spec.Offset)
	if !ok {
		return 0, fmt.Errorf("probe %s: %s+%d is not in %s's code", spec.Name, spec.Symbol, spec.Offset, f.Path())
	}
	return off, nil
}

// usdtPlace returns the file offsets of a USDT probe of f and of its
// semaphore (0 when it has none).
func usdtPlace(f *objfile.File, spec *attach.EventSpec) (place, semaphore uint64, err error) {
	probes, err := f.SDTProbes()
	if err != nil {
		return 0, 0, fmt.Errorf("probe %s: cannot read the USDT notes of %s: %w", spec.Name, f.Path(), err)
	}
	var have []string
	for _, p := range probes {
		if p.Provider+":"+p.Name != spec.Symbol {
			have = append(have, "sdt_"+p.Provider+":"+p.Name)
			continue
		}
		off, ok := f.FileOffset(p.Addr)
		if !ok {
			return 0, 0, fmt.Errorf("probe %s: its place in %s is not in the file's code", spec.Name, f.Path())
		}
		if p.Semaphore != 0 {
			if semaphore, ok = f.FileOffset(p.Semaphore); !ok {
				return 0, 0, fmt.Errorf("probe %s: its semaphore in %s is not in the file's data", spec.Name, f.Path())
			}
		}
		return off, semaphore, nil
	}
	if len(have) == 0 {
		return 0, 0, fmt.Errorf("probe %s: %s has no USDT probes (no .note.stapsdt section)", spec.Name, f.Path())
	}
	slices.Sort(have)
	have = slices.Compact(have)
	if len(have) > 8 {
		have = append(have[:8], "...")
	}
	return 0, 0, fmt.Errorf("probe %s: %s has no USDT probe %s; it has %s", spec.Name, f.Path(), spec.Symbol, strings.Join(have, ", "))
}

// libDirs are where a library named in a probe is looked for, after the
// targets' own files.
var libDirs = []string{"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib/aarch64-linux-gnu", "/usr/lib/aarch64-linux-gnu",
	"/lib64", "/usr/lib64", "/lib", "/usr/lib", "/usr/local/lib"}

// findProbeBinary finds the binary of a uprobe or USDT probe: a path as
// given; else, by the name perf's event name gives it (probe_libc is
// libc.so.6) or --probe gave, the launched command's program or an
// attached process's, a file they have mapped, a program on PATH, or a
// library in the usual directories. A USDT probe named by its event alone
// (sdt_PROVIDER:NAME) is looked for in the targets' programs.
func findProbeBinary(spec *attach.EventSpec, env *eventEnv) (string, error) {
	name := spec.Binary
	if strings.Contains(name, "/") {
		if _, err := os.Stat(name); err != nil {
			return "", fmt.Errorf("probe %s: %w", spec.Name, err)
		}
		return filepath.Abs(name)
	}
	var programs []string
	if len(env.command) > 0 {
		if p, err := lookPath(env.command[0], env.env); err == nil {
			programs = append(programs, p)
		}
	}
	for _, pid := range env.pids {
		if p, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); err == nil {
			programs = append(programs, p)
		}
	}
	matches := func(p string) bool {
		base := filepath.Base(p)
		return base == name || group(base) == name
	}
	if name == "" {
		// sdt_PROVIDER:NAME: the first program that has it.
		for _, p := range programs {
			if f, err := objfile.Open(p); err == nil {
				probes, _ := f.SDTProbes()
				f.Close()
				if slices.ContainsFunc(probes, func(pr objfile.SDTProbe) bool { return pr.Provider+":"+pr.Name == spec.Symbol }) {
					return p, nil
				}
			}
		}
		return "", fmt.Errorf("probe %s: the program recorded has no such USDT probe; name its binary: --probe BIN:%s", spec.Name, strings.TrimPrefix(spec.Name, "sdt_"))
	}
	for _, p := range programs {
		if matches(p) {
			return p, nil
		}
	}
	for _, pid := range env.pids {
		if data, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", pid)); err == nil {
			for _, line := range strings.Split(string(data), "\n") {
				if i := strings.IndexByte(line, '/'); i >= 0 && matches(line[i:]) {
					return line[i:], nil
				}
			}
		}
	}
	if p, err := lookPath(name, env.env); err == nil {
		return p, nil
	}
	for _, d := range libDirs {
		for _, pat := range []string{name, name + ".so", name + ".so.*", name + "-*.so", name + "-*.so.*"} {
			m, _ := filepath.Glob(filepath.Join(d, pat))
			slices.Sort(m)
			for _, p := range m {
				if isELF(p) { // libc.so is a linker script
					return p, nil
				}
			}
		}
	}
	return "", fmt.Errorf("probe %s: no binary %q found (not the program recorded, nor on PATH, nor a library in %s): give its path, --probe /path/to/%s:%s", spec.Name, name, strings.Join(libDirs[:2], " or "), name, spec.Symbol)
}

// isELF reports whether the file at p starts as an ELF file does.
func isELF(p string) bool {
	f, err := os.Open(p)
	if err != nil {
		return false
	}
	defer f.Close()
	b := make([]byte, 4)
	n, _ := f.Read(b)
	return n == 4 && string(b) == "\x7fELF"
}

// group is a file's name as perf probe makes a group name of it: up to
// its first dot, with anything but letters, digits and _ as _.
func group(base string) string {
	if i := strings.IndexByte(base, '.'); i > 0 {
		base = base[:i]
	}
	b := []byte(base)
	for i, c := range b {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			b[i] = '_'
		}
	}
	return string(b)
}

// lookPath finds a program as the launcher will, with env's PATH.
func lookPath(file string, env []string) (string, error) {
	if strings.Contains(file, "/") {
		return filepath.Abs(file)
	}
	for _, kv := range env {
		if p, ok := strings.CutPrefix(kv, "PATH="); ok {
			for _, dir := range filepath.SplitList(p) {
				cand := filepath.Join(dir, file)
				if st, err := os.Stat(cand); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
					return filepath.Abs(cand)
				}
			}
			return "", exec.ErrNotFound
		}
	}
	return exec.LookPath(file)
}

// hardwareMissing reports whether err, from opening a hardware event,
// means the machine has no PMU to count it (a VM).
func hardwareMissing(err error) bool {
	return errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENODEV) || errors.Is(err, unix.EOPNOTSUPP)
}

// eventOpenError turns an errno from opening ev into one line that says
// what to grant or type; nil when the errno says nothing particular to
// the event (the session's generic advice then applies).
func eventOpenError(ev *perfEvent, err error) error {
	var errno unix.Errno
	if !errors.As(err, &errno) {
		return nil
	}
	name := ev.spec.Name
	switch {
	case ev.spec.Kind == attach.KindTracepoint && (errno == unix.EACCES || errno == unix.EPERM):
		p, _ := proc.ReadSysctlInt("perf_event_paranoid")
		return fmt.Errorf("tracepoint %s: reading its fields needs CAP_PERFMON (or CAP_SYS_ADMIN), or `sysctl kernel.perf_event_paranoid=-1` (it is %d): %w", name, p, attach.ErrPermission)
	case (ev.spec.Kind == attach.KindKprobe || ev.spec.Kind == attach.KindUprobe || ev.spec.Kind == attach.KindUSDT) && (errno == unix.EACCES || errno == unix.EPERM):
		return fmt.Errorf("probe %s: making a probe needs root (CAP_SYS_ADMIN, or CAP_PERFMON on Linux 5.8+): %w", name, attach.ErrPermission)
	case ev.spec.Kind == attach.KindKprobe && (errno == unix.ENOENT || errno == unix.EINVAL || errno == unix.EADDRNOTAVAIL):
		return fmt.Errorf("probe %s: the kernel cannot probe %s (no such function in /proc/kallsyms, or one it does not allow probing: %w)", name, ev.spec.Symbol, errno)
	case (ev.spec.Kind == attach.KindUprobe || ev.spec.Kind == attach.KindUSDT) && errno == unix.EINVAL:
		return fmt.Errorf("probe %s: the kernel refused a probe at that place in %s (%w)", name, ev.spec.Binary, errno)
	case ev.spec.Kind == attach.KindHardware && hardwareMissing(err):
		return fmt.Errorf("event %s needs a hardware PMU, which this machine has none of (no %s, as in most VMs): use -e cpu-clock", name, filepath.Join(pmuDir, "cpu"))
	case errno == unix.EINVAL && ev.attr.Bits&unix.PerfBitFreq != 0:
		if mx, ok := proc.ReadSysctlInt("perf_event_max_sample_rate"); ok && ev.attr.Sample > uint64(mx) {
			return fmt.Errorf("event %s: %d samples a second is past kernel.perf_event_max_sample_rate=%d: ask for fewer (-F, or %s/freq=N/), or raise the limit", name, ev.attr.Sample, mx, name)
		}
	}
	return nil
}
