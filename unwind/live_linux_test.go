//go:build linux && amd64

package unwind

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gprof-dev/gprof/objfile"
	"golang.org/x/sys/unix"
)

// The tests in this file build testdata/chains.c with gcc, stop the program
// at known points, copy its registers and stack with ptrace and
// process_vm_readv, unwind, and compare with gdb's backtrace of the same
// stopped thread.

// Variants of the test program: CFI in .eh_frame (what distributions ship),
// CFI only in .debug_frame, and no CFI at all but frame pointers.
var variants = map[string][]string{
	"eh":    {"-O2", "-fomit-frame-pointer", "-g"},
	"debug": {"-O2", "-fomit-frame-pointer", "-g", "-fno-asynchronous-unwind-tables", "-fno-unwind-tables"},
	"fp":    {"-O2", "-fno-omit-frame-pointer", "-fno-asynchronous-unwind-tables", "-fno-unwind-tables"},
}

var (
	buildMu  sync.Mutex
	buildDir string
	built    = map[string]error{}
)

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// chainsBinary builds testdata/chains.c in a variant once per test run.
func chainsBinary(t testing.TB, variant string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root for ptrace")
	}
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("no gcc")
	}
	buildMu.Lock()
	defer buildMu.Unlock()
	if buildDir == "" {
		d, err := os.MkdirTemp("", "unwindtest")
		if err != nil {
			t.Fatal(err)
		}
		buildDir = d
	}
	bin := filepath.Join(buildDir, "chains-"+variant)
	err, ok := built[variant]
	if !ok {
		args := append(append([]string(nil), variants[variant]...), "-pthread", "-o", bin, "testdata/chains.c")
		if out, e := exec.Command("gcc", args...).CombinedOutput(); e != nil {
			err = fmt.Errorf("gcc: %v\n%s", e, out)
		}
		built[variant] = err
	}
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// target is a running test program.
type target struct {
	cmd      *exec.Cmd
	pid, tid int
}

// start runs chains in mode and waits for its "ready TID" line.
func start(t testing.TB, variant, mode string) *target {
	t.Helper()
	cmd := exec.Command(chainsBinary(t, variant), mode)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("%s: %v", mode, err)
	}
	tid, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "ready ")))
	if err != nil {
		t.Fatalf("%s: bad line %q", mode, line)
	}
	return &target{cmd: cmd, pid: cmd.Process.Pid, tid: tid}
}

// waitStopped waits until the thread is in a stopped state.
func (tg *target) waitStopped(t testing.TB) {
	t.Helper()
	path := fmt.Sprintf("/proc/%d/task/%d/stat", tg.pid, tg.tid)
	for i := 0; i < 500; i++ {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if i := bytes.LastIndexByte(b, ')'); i > 0 && len(b) > i+2 && (b[i+2] == 'T' || b[i+2] == 't') {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("target did not stop")
}

// snapshot is what a sampler hands to the unwinder.
type snapshot struct {
	regs  Regs
	stack []byte
}

// onLockedThread runs f on a goroutine locked to its OS thread, since
// every ptrace request must come from the thread that attached. The thread
// exits with the goroutine, which detaches anything left attached.
func onLockedThread(f func()) {
	done := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		defer close(done)
		f()
	}()
	<-done
}

// capture seizes tid, stops it, reads its registers and up to stackSize
// bytes of stack, and detaches. With keepStopped the process is left in
// group-stop at the same point, for gdb.
func capture(pid, tid, stackSize int, keepStopped bool) (snapshot, error) {
	var s snapshot
	var err error
	onLockedThread(func() {
		if err = unix.PtraceSeize(tid); err != nil {
			err = fmt.Errorf("seize: %w", err)
			return
		}
		defer func() {
			if keepStopped {
				// Pending until the thread resumes, so it stops before
				// executing another instruction.
				unix.Kill(pid, unix.SIGSTOP)
			}
			unix.PtraceDetach(tid)
		}()
		if err = unix.PtraceInterrupt(tid); err != nil {
			err = fmt.Errorf("interrupt: %w", err)
			return
		}
		var ws unix.WaitStatus
		if _, err = unix.Wait4(tid, &ws, unix.WALL, nil); err != nil {
			return
		}
		if !ws.Stopped() {
			err = fmt.Errorf("not stopped: %v", ws)
			return
		}
		var regs unix.PtraceRegs
		if err = unix.PtraceGetRegs(tid, &regs); err != nil {
			return
		}
		s.regs = Regs{IP: regs.Rip, SP: regs.Rsp, FP: regs.Rbp}
		s.stack = readStack(pid, regs.Rsp, stackSize)
	})
	return s, err
}

// readStack copies memory at sp page by page until size bytes or the end
// of the mapping, as process_vm_readv stops at the first unmapped byte.
func readStack(pid int, sp uint64, size int) []byte {
	buf := make([]byte, size)
	n := 0
	for n < size {
		chunk := 4096 - int((sp+uint64(n))%4096)
		if chunk > size-n {
			chunk = size - n
		}
		local := []unix.Iovec{{Base: &buf[n]}}
		local[0].SetLen(chunk)
		remote := []unix.RemoteIovec{{Base: uintptr(sp) + uintptr(n), Len: chunk}}
		got, err := unix.ProcessVMReadv(pid, local, remote, 0)
		if err != nil || got <= 0 {
			break
		}
		n += got
	}
	return buf[:n]
}

// liveReader reads a stopped process's memory word by word, for
// UnwindMemory.
func liveReader(pid int) ReadMemory {
	return func(p []byte, addr uint64) bool {
		local := []unix.Iovec{{Base: &p[0]}}
		local[0].SetLen(len(p))
		remote := []unix.RemoteIovec{{Base: uintptr(addr), Len: len(p)}}
		n, err := unix.ProcessVMReadv(pid, local, remote, 0)
		return err == nil && n == len(p)
	}
}

// addressSpace reads the executable mappings of pid.
func addressSpace(t testing.TB, pid int) *AddressSpace {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		t.Fatal(err)
	}
	as := new(AddressSpace)
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 || !strings.Contains(f[1], "x") {
			continue
		}
		lo, hi, _ := strings.Cut(f[0], "-")
		start, _ := strconv.ParseUint(lo, 16, 64)
		end, _ := strconv.ParseUint(hi, 16, 64)
		off, _ := strconv.ParseUint(f[2], 16, 64)
		m := Mapping{Start: start, End: end, FileOffset: off}
		switch {
		case len(f) >= 6 && f[5] == "[vdso]":
			m.Path = "[vdso]"
		case len(f) >= 6 && strings.HasPrefix(f[5], "/"):
			m.Path = fmt.Sprintf("/proc/%d/map_files/%s", pid, f[0])
		}
		as.Add(m)
	}
	return as
}

// symbolizer names addresses from ELF symbol tables, for messages and for
// checks on the shape of a chain.
type symbolizer struct {
	as   *AddressSpace
	syms map[string][]objfile.Symbol
	u    *Unwinder
}

func newSymbolizer(u *Unwinder, as *AddressSpace) *symbolizer {
	return &symbolizer{as: as, syms: make(map[string][]objfile.Symbol), u: u}
}

func (s *symbolizer) name(addr uint64) string {
	m := s.as.find(addr)
	if m == nil {
		return fmt.Sprintf("%#x(unmapped)", addr)
	}
	mod := s.u.resolve(m)
	if mod == nil {
		return fmt.Sprintf("%#x(%s)", addr, m.Path)
	}
	syms, ok := s.syms[mod.name]
	if !ok {
		if f, err := objfile.NewFile(bytes.NewReader(mod.image), mod.name); err == nil {
			// Debian's libc keeps its full symbol table in a separate
			// debug file (libc6-dbg), found by build-id. Of the names
			// an address has, the last in order wins: the file's own,
			// its .dynsym last, so that an exported name (qsort_r) is
			// shown rather than an alias (__qsort_r).
			if dbg := debugFile(f); dbg != nil {
				syms, _ = dbg.SymbolTable()
				dbg.Close()
			}
			own, _ := f.SymbolTable()
			syms = append(syms, own...)
			sort.SliceStable(syms, func(i, j int) bool { return syms[i].Addr < syms[j].Addr })
		}
		s.syms[mod.name] = syms
	}
	rel := addr - m.bias
	i := sort.Search(len(syms), func(i int) bool { return syms[i].Addr > rel })
	if i == 0 {
		return fmt.Sprintf("%#x(%s)", addr, filepath.Base(m.Path))
	}
	return syms[i-1].Name
}

// debugFile opens f's separate debug file where Debian installs it, by
// build-id, or returns nil.
func debugFile(f *objfile.File) *objfile.File {
	id := fmt.Sprintf("%x", f.Identity().BuildID)
	if len(id) < 3 {
		return nil
	}
	dbg, err := objfile.Open(fmt.Sprintf("/usr/lib/debug/.build-id/%s/%s.debug", id[:2], id[2:]))
	if err != nil {
		return nil
	}
	return dbg
}

func (s *symbolizer) names(addrs []uint64) []string {
	out := make([]string, len(addrs))
	for i, a := range addrs {
		out[i] = s.name(a)
	}
	return out
}

var gdbFrame = regexp.MustCompile(`^#(\d+)\s+(?:(0x[0-9a-f]+) in |(<signal handler called>))`)

// gdbBacktrace runs gdb on the stopped process and returns the PCs of
// tid's backtrace; 0 stands for gdb's "<signal handler called>".
func gdbBacktrace(t testing.TB, pid, tid int) []uint64 {
	t.Helper()
	if _, err := exec.LookPath("gdb"); err != nil {
		t.Skip("no gdb")
	}
	// Without separate debug info gdb unwinds with the same CFI we use;
	// with it, gdb adds virtual frames for tail calls (pthread_kill's jump
	// to __pthread_kill_implementation) that are not on the machine stack.
	out, err := exec.Command("gdb", "-batch", "-nx",
		"-iex", "set debug-file-directory /nonexistent",
		"-iex", "set debuginfod enabled off",
		"-p", strconv.Itoa(pid),
		"-ex", "set backtrace past-main on",
		"-ex", "set backtrace past-entry on",
		"-ex", "set print frame-info location-and-address",
		"-ex", "set print frame-arguments none",
		"-ex", "thread apply all bt").CombinedOutput()
	if err != nil {
		t.Fatalf("gdb: %v\n%s", err, out)
	}
	var pcs []uint64
	in := false
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, "Thread ") {
			in = strings.Contains(line, fmt.Sprintf("(LWP %d)", tid))
			continue
		}
		if !in {
			continue
		}
		m := gdbFrame.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		if m[3] != "" {
			pcs = append(pcs, 0)
			continue
		}
		pc, _ := strconv.ParseUint(m[2][2:], 16, 64)
		pcs = append(pcs, pc)
	}
	if len(pcs) == 0 {
		t.Fatalf("no backtrace for thread %d in gdb output:\n%s", tid, out)
	}
	return pcs
}

// compareWithGDB checks that got equals gdb's backtrace, matching a signal
// frame to an address in a sigreturn trampoline.
func compareWithGDB(t *testing.T, sym *symbolizer, got, want []uint64) {
	t.Helper()
	ok := len(got) == len(want)
	for i := 0; ok && i < len(got); i++ {
		if want[i] == 0 {
			m := sym.as.find(got[i])
			ok = m != nil && sym.u.resolve(m) != nil && sym.u.resolve(m).isSigreturn(got[i]-m.bias)
		} else {
			ok = got[i] == want[i]
		}
	}
	if !ok {
		t.Errorf("unwound stack differs from gdb's\n got: %s\nwant: %s", fmtStack(sym, got), fmtStack(sym, want))
	}
}

func fmtStack(sym *symbolizer, pcs []uint64) string {
	var b strings.Builder
	for i, pc := range pcs {
		if pc == 0 {
			fmt.Fprintf(&b, "\n  #%d <signal handler called>", i)
			continue
		}
		fmt.Fprintf(&b, "\n  #%d %#x %s", i, pc, sym.name(pc))
	}
	return b.String()
}

// TestStoppedChains stops the program at known points and compares the
// unwound stacks, from a stack copy and from live memory, with gdb's.
func TestStoppedChains(t *testing.T) {
	cases := []struct {
		mode string
		// want lists functions that must appear in order (not
		// necessarily adjacent), outermost last.
		want []string
	}{
		{"recurse", []string{"stop_here", "rec_plain", "rec_vla", "rec_plain", "main", "__libc_start_main|__libc_start_main_impl", "_start"}},
		{"qsort", []string{"stop_here", "cmp_ints", "msort_with_tmp|mrand48_r", "qsort|qsort_r", "do_qsort", "main", "_start"}},
		{"thread", []string{"stop_here", "thread_leaf", "thread_start", "start_thread|pthread_condattr_setpshared", "clone3|__GI___clone3|__xmknodat"}},
		{"signal", []string{"stop_here", "handler_leaf", "on_signal", "sig_inner", "sig_outer", "main", "_start"}},
		{"alarm", []string{"stop_here", "handler_leaf", "on_signal", "spin_leaf", "spin_outer", "main", "_start"}},
	}
	for _, variant := range []string{"eh", "debug", "fp"} {
		for _, c := range cases {
			if variant == "fp" && c.mode == "alarm" {
				// Interrupted in a leaf that sets up no frame: a
				// frame-pointer walk cannot see the leaf's caller.
				continue
			}
			t.Run(variant+"/"+c.mode, func(t *testing.T) { testChain(t, variant, c.mode, c.want) })
		}
	}
}

func testChain(t *testing.T, variant, mode string, want []string) {
	{
		{
			tg := start(t, variant, mode)
			tg.waitStopped(t)
			as := addressSpace(t, tg.pid)
			// Keep the thread stopped after detaching, for gdb.
			snap, err := capture(tg.pid, tg.tid, 256<<10, true)
			if err != nil {
				t.Fatal(err)
			}
			u := New()
			defer u.Close()
			sym := newSymbolizer(u, as)
			got := u.Unwind(as, snap.regs, snap.stack, nil)
			names := sym.names(got)
			t.Logf("%d frames: %s", len(got), strings.Join(names, " <- "))
			checkOrder(t, names, want)

			tg.waitStopped(t)
			if variant != "fp" {
				// Without CFI gdb guesses from prologues and goes astray
				// (it reports a signal frame in the recursion), so the
				// frame-pointer build is checked against the known chain
				// only.
				compareWithGDB(t, sym, got, gdbBacktrace(t, tg.pid, tg.tid))
			}

			// Live memory with no stack copy must give the same answer.
			var live []uint64
			onLockedThread(func() {
				live = u.UnwindMemory(as, snap.regs, nil, liveReader(tg.pid), nil)
			})
			if fmt.Sprint(live) != fmt.Sprint(got) {
				t.Errorf("live unwind differs:\n got: %s\nwant: %s", fmtStack(sym, live), fmtStack(sym, got))
			}

			// A truncated stack copy must yield a prefix, never garbage.
			for n := 0; n < len(snap.stack); n += 8 + n/4 {
				part := u.Unwind(as, snap.regs, snap.stack[:n], nil)
				if len(part) > len(got) || fmt.Sprint(part) != fmt.Sprint(got[:len(part)]) {
					t.Fatalf("stack cut at %d: got %s\nwant a prefix of %s", n, fmtStack(sym, part), fmtStack(sym, got))
				}
			}
		}
	}
}

func checkOrder(t *testing.T, names, want []string) {
	t.Helper()
	i := 0
	for _, n := range names {
		if i >= len(want) {
			break
		}
		// Alternatives separated by | allow for libc without debug
		// symbols, where only exported names are known.
		for _, w := range strings.Split(want[i], "|") {
			if n == w || strings.HasPrefix(n, w+"@") || strings.HasPrefix(n, w+".") || strings.HasPrefix(n, w+"_alias") {
				i++
				break
			}
		}
	}
	if i < len(want) {
		t.Errorf("missing %q (in order %q) in %q", want[i], want, names)
	}
}

// TestBusySamples interrupts a busy program at arbitrary points (its own
// code, libc leaves without frame pointers, the vdso, a qsort callback,
// PLT stubs) and checks every stack is complete; a few are compared with
// gdb exactly.
func TestBusySamples(t *testing.T) {
	// Not the frame-pointer build: a callback without CFI called from
	// libc, which uses rbp as a general register, cannot be walked by
	// frame pointers, by us or by the kernel.
	for _, variant := range []string{"eh", "debug"} {
		t.Run(variant, func(t *testing.T) { testBusy(t, variant) })
	}
}

func testBusy(t *testing.T, variant string) {
	tg := start(t, variant, "busy")
	time.Sleep(20 * time.Millisecond)
	as := addressSpace(t, tg.pid)
	u := New()
	defer u.Close()
	sym := newSymbolizer(u, as)
	n := 300
	if testing.Short() {
		n = 50
	}
	where := map[string]int{}
	var out []uint64
	for i := 0; i < n; i++ {
		gdbCheck := i%50 == 0
		snap, err := capture(tg.pid, tg.tid, 64<<10, gdbCheck)
		if err != nil {
			t.Fatal(err)
		}
		out = u.Unwind(as, snap.regs, snap.stack, out[:0])
		names := sym.names(out)
		where[locationClass(as, out[0], names[0])]++
		checkOrder(t, names, []string{"busy", "busy_outer", "main", "__libc_start_call_main|__libc_init_first", "__libc_start_main|__libc_start_main_impl", "_start"})
		if t.Failed() {
			t.Fatalf("sample %d: %s", i, fmtStack(sym, out))
		}
		if gdbCheck {
			tg.waitStopped(t)
			compareWithGDB(t, sym, out, gdbBacktrace(t, tg.pid, tg.tid))
			tg.cmd.Process.Signal(unix.SIGCONT)
		}
		time.Sleep(time.Millisecond)
	}
	t.Logf("leaf locations of %d samples: %v; memo hits %d misses %d", n, where, u.memoHits, u.memoMisses)
}

func locationClass(as *AddressSpace, pc uint64, name string) string {
	if m, _ := as.Lookup(pc); m.Path == "[vdso]" {
		return "vdso"
	}
	return name
}
