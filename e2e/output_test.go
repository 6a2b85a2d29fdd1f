//go:build linux

package e2e

// Output and input paths in real use: -o to devices, FIFOs, symlinks,
// read-only files and directories, '-' for standard input and output, and
// signals during the steps that write. They run the built gprof like the
// other end-to-end tests.

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gprof-dev/gprof/format/gecko"
	"github.com/gprof-dev/gprof/profile"
)

// synthProfile writes a Gecko profile of threads × samples samples over
// 2000 named functions of a library that is on no disk, so that convert
// resolves nothing from files and its time goes to reading and writing.
func synthProfile(t *testing.T, path string, threads, samples int) {
	t.Helper()
	rng := rand.New(rand.NewSource(1))
	const funcs = 2000
	key := profile.LibKey{DebugName: "synthlib", BreakpadID: "5A5A"}
	lib := profile.Lib{Start: 0x400000, End: 0x400000 + funcs*256, Name: "synthlib", Path: "/nonexistent/synthlib", DebugName: key.DebugName, BreakpadID: key.BreakpadID}
	st := &profile.SymbolTable{}
	for f := uint64(0); f < funcs; f++ {
		st.Add(key, f*256, []profile.SymbolFrame{{Function: "synth_function_" + strconv.Itoa(int(f)), FuncAddr: f * 256, FuncSize: 256}})
	}
	pr := &profile.Process{Pid: 1, Name: "synth", End: -1, Libs: []profile.Lib{lib}}
	for i := 0; i < threads; i++ {
		th := &profile.Thread{Tid: 1 + i, Name: "worker", Main: i == 0, End: -1}
		pool := make([]int32, 5000)
		for j := range pool {
			fs := make([]profile.Frame, 8+rng.Intn(24))
			for d := range fs {
				fs[d] = profile.Frame{Address: lib.Start + uint64(rng.Intn(funcs))*256, Category: profile.CategoryUser}
			}
			pool[j] = th.InternStack(fs)
		}
		for j := 0; j < samples; j++ {
			th.Samples.Add(pool[rng.Intn(len(pool))], int64(j)*1e6, 1e6)
		}
		pr.Threads = append(pr.Threads, th)
	}
	p := &profile.Profile{Meta: profile.Meta{Product: "synth", Interval: 1e6, Duration: int64(samples) * 1e6}, Processes: []*profile.Process{pr}, Symbols: st}
	if err := gecko.WriteFile(path, p); err != nil {
		t.Fatal(err)
	}
}

// smallProfile is a synthetic profile shared by the tests of one run.
func smallProfile(t *testing.T) string {
	t.Helper()
	path := filepath.Join(fixtures, "small.json.gz")
	if _, err := os.Stat(path); err != nil {
		synthProfile(t, path, 1, 2000)
	}
	return path
}

func isGzip(b []byte) bool { return len(b) > 2 && b[0] == 0x1f && b[1] == 0x8b }

// readFIFO reads everything written to the FIFO at path, in the background.
func readFIFO(path string) <-chan []byte {
	got := make(chan []byte, 1)
	go func() {
		f, err := os.Open(path)
		if err != nil {
			got <- nil
			return
		}
		b, _ := io.ReadAll(f)
		f.Close()
		got <- b
	}()
	return got
}

// TestOutputKinds writes -o to each kind of path: regular files are
// replaced atomically, keeping what they were (mode, symlink); devices and
// FIFOs are written in place and never replaced; directories are refused
// with one line that names no temporary file.
func TestOutputKinds(t *testing.T) {
	in := smallProfile(t)
	dir := t.TempDir()

	t.Run("fifo", func(t *testing.T) {
		fifo := filepath.Join(dir, "out.fifo.json.gz")
		if err := syscall.Mkfifo(fifo, 0o600); err != nil {
			t.Fatal(err)
		}
		got := readFIFO(fifo)
		if r := gprof(t, "convert", in, "-o", fifo); r.code != 0 {
			t.Fatalf("exit %d: %s", r.code, r.stderr)
		}
		select {
		case b := <-got:
			if !isGzip(b) {
				t.Errorf("the reader got %d bytes, not gzip", len(b))
			}
		case <-time.After(10 * time.Second):
			t.Errorf("nothing was written to the FIFO")
		}
		if st, _ := os.Lstat(fifo); st.Mode()&os.ModeNamedPipe == 0 {
			t.Errorf("the FIFO became %v", st.Mode())
		}
	})
	t.Run("char-device", func(t *testing.T) {
		// A private /dev/null (major 1, minor 3): if gprof replaced it,
		// the machine's own would still be safe.
		null := filepath.Join(dir, "null")
		if err := syscall.Mknod(null, syscall.S_IFCHR|0o666, 1<<8|3); err != nil {
			t.Skipf("cannot make a device node here: %v", err)
		}
		if f, err := os.OpenFile(null, os.O_WRONLY, 0); err != nil {
			t.Skipf("device nodes do not work here (nodev?): %v", err)
		} else {
			f.Close()
		}
		if r := gprof(t, "convert", in, "-o", null); r.code != 0 {
			t.Fatalf("exit %d: %s", r.code, r.stderr)
		}
		if st, _ := os.Lstat(null); st.Mode()&os.ModeCharDevice == 0 {
			t.Errorf("the device became %v", st.Mode())
		}
	})
	t.Run("symlink", func(t *testing.T) {
		os.Mkdir(filepath.Join(dir, "real"), 0o755)
		target := filepath.Join(dir, "real", "p.json.gz")
		os.WriteFile(target, []byte("old"), 0o600)
		link := filepath.Join(dir, "link.json.gz")
		os.Symlink(target, link)
		if r := gprof(t, "convert", in, "-o", link); r.code != 0 {
			t.Fatalf("exit %d: %s", r.code, r.stderr)
		}
		if st, _ := os.Lstat(link); st.Mode()&os.ModeSymlink == 0 {
			t.Errorf("the link became %v", st.Mode())
		}
		b, _ := os.ReadFile(target)
		st, _ := os.Stat(target)
		if !isGzip(b) || st.Mode() != 0o600 {
			t.Errorf("target: gzip %v, mode %v; want a new gzip file, mode 0600", isGzip(b), st.Mode())
		}
	})
	t.Run("read-only", func(t *testing.T) {
		path := filepath.Join(dir, "ro.json")
		os.WriteFile(path, []byte("old"), 0o444)
		os.Chmod(path, 0o444)
		if r := gprof(t, "convert", in, "-o", path); r.code != 0 {
			t.Fatalf("exit %d: %s", r.code, r.stderr)
		}
		b, _ := os.ReadFile(path)
		st, _ := os.Stat(path)
		if !bytes.Contains(b, []byte("preprocessedProfileVersion")) || st.Mode() != 0o444 {
			t.Errorf("got %.30q mode %v; want a processed profile, mode 0444", b, st.Mode())
		}
	})
	t.Run("directory", func(t *testing.T) {
		sub := filepath.Join(dir, "sub")
		os.Mkdir(sub, 0o755)
		for _, args := range [][]string{{"convert", in, "-o", sub}, {"record", "-o", sub, "--", "true"}} {
			r := gprof(t, args...)
			oneErrorLine(t, r, sub)
			if !strings.Contains(r.stderr, "is a directory") {
				t.Errorf("%v: %q does not say it is a directory", args, r.stderr)
			}
		}
		if st, _ := os.Stat(sub); !st.IsDir() {
			t.Errorf("the directory was replaced")
		}
	})
	t.Run("upper-case-GZ", func(t *testing.T) {
		path := filepath.Join(dir, "P.JSON.GZ")
		if r := gprof(t, "symbolicate", in, "-o", path); r.code != 0 {
			t.Fatalf("exit %d: %s", r.code, r.stderr)
		}
		if b, _ := os.ReadFile(path); !isGzip(b) {
			t.Errorf("%s is not gzip", path)
		}
	})
	t.Run("no-temp-names", func(t *testing.T) {
		ro := filepath.Join(dir, "rofs")
		os.Mkdir(ro, 0o755)
		if b, err := exec.Command("mount", "-t", "tmpfs", "-o", "ro,size=64k", "tmpfs", ro).CombinedOutput(); err != nil {
			t.Skipf("cannot mount a read-only tmpfs: %v %s", err, b)
		}
		defer exec.Command("umount", ro).Run()
		for _, args := range [][]string{{"convert", in, "-o", filepath.Join(ro, "p.json")}, {"record", "-o", filepath.Join(ro, "p.json"), "--", "true"}} {
			r := gprof(t, args...)
			oneErrorLine(t, r, filepath.Join(ro, "p.json"))
			if strings.Contains(r.stderr, "probe") || strings.Contains(r.stderr, ".tmp") || !strings.Contains(r.stderr, "read-only") {
				t.Errorf("%v: %q", args, r.stderr)
			}
		}
	})
}

// TestStdio: '-' is standard input for PROFILE (gzipped or not) and
// standard output for -o.
func TestStdio(t *testing.T) {
	in := smallProfile(t)
	gz, _ := os.ReadFile(in)
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		t.Fatal(err)
	}
	plain, _ := io.ReadAll(zr)
	for name, data := range map[string][]byte{"gzip": gz, "plain": plain} {
		t.Run(name, func(t *testing.T) {
			cmd := exec.Command(gprofBin, "convert", "-", "-o", "-")
			cmd.Stdin = bytes.NewReader(data)
			var o, e bytes.Buffer
			cmd.Stdout, cmd.Stderr = &o, &e
			if err := cmd.Run(); err != nil {
				t.Fatalf("%v: %s", err, e.String())
			}
			if !bytes.HasPrefix(o.Bytes(), []byte("{")) || !bytes.Contains(o.Bytes(), []byte("preprocessedProfileVersion")) {
				t.Errorf("stdout is not a processed profile: %.40q", o.String())
			}
			cmd = exec.Command(gprofBin, "report", "--json", "-")
			cmd.Stdin = bytes.NewReader(data)
			out, err := cmd.Output()
			if err != nil || !bytes.Contains(out, []byte("synth_function_")) {
				t.Errorf("report -: %v %.80q", err, out)
			}
		})
	}
	if _, err := os.Stat("-"); err == nil {
		t.Errorf("a file named '-' was written")
	}
}

// TestOutputRequired: convert and symbolicate without -o say so in one
// line, exit 2, with no help text.
func TestOutputRequired(t *testing.T) {
	for _, args := range [][]string{{"convert", "x.json"}, {"convert"}, {"symbolicate", "x.json"}} {
		r := gprof(t, args...)
		if r.code != 2 || r.stdout != "" {
			t.Errorf("%v: exit %d, stdout %.60q; want 2 and no help", args, r.code, r.stdout)
		}
		lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
		if len(lines) != 1 || !strings.HasPrefix(lines[0], "gprof: error: ") || strings.Contains(r.stderr, "Required") {
			t.Errorf("%v: stderr %q", args, r.stderr)
		}
	}
}

// TestGenManMissingDir: gen-man refuses a directory that does not exist
// rather than create it silently (a typo would go unnoticed).
func TestGenManMissingDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "no", "such")
	r := gprof(t, "gen-man", dir)
	oneErrorLine(t, r, dir)
	if _, err := os.Stat(dir); err == nil {
		t.Errorf("gen-man created %s", dir)
	}
}

// waitForTemp returns once gprof is writing a temporary file in dir.
func waitForTemp(t *testing.T, dir string, g *bgGprof) bool {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		for _, n := range dirNames(t, dir) {
			if st, err := os.Stat(filepath.Join(dir, n)); err == nil && strings.Contains(n, ".tmp") && st.Size() > 0 {
				return true
			}
		}
		if g.exited(time.Millisecond) {
			return false
		}
	}
	return false
}

// TestInterruptWhileWriting signals convert while it writes a big profile:
// it stops at once with one line and the signal's exit code, leaves no
// temporary file, and the old output file is untouched; SIGQUIT prints no
// goroutine dump.
func TestInterruptWhileWriting(t *testing.T) {
	big := filepath.Join(fixtures, "big.json.gz")
	if _, err := os.Stat(big); err != nil {
		synthProfile(t, big, 4, 150_000)
	}
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGQUIT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			dir := t.TempDir()
			out := filepath.Join(dir, "out.json.gz")
			os.WriteFile(out, []byte("old"), 0o644)
			g := startGprof(t, nil, "convert", big, "-o", out)
			if !waitForTemp(t, dir, g) {
				t.Fatalf("convert never wrote a temporary file: %s", g.stderr.String())
			}
			g.cmd.Process.Signal(sig)
			if !g.exited(5 * time.Second) {
				t.Fatalf("convert still running 5 s after %v", sig)
			}
			if code, want := g.cmd.ProcessState.ExitCode(), 128+int(sig); code != want {
				t.Errorf("exit %d (%v), want %d", code, g.cmd.ProcessState, want)
			}
			stderr := g.stderr.String()
			if lines := strings.Split(strings.TrimSpace(stderr), "\n"); len(lines) != 1 || !strings.Contains(stderr, "interrupted") {
				t.Errorf("want one 'interrupted' line, got %q", stderr)
			}
			if strings.Contains(stderr, "goroutine") {
				t.Errorf("goroutine dump: %.200s", stderr)
			}
			if names := dirNames(t, dir); len(names) != 1 {
				t.Errorf("files left: %v", names)
			}
			if b, _ := os.ReadFile(out); string(b) != "old" {
				t.Errorf("the old output changed (%d bytes)", len(b))
			}
		})
	}
}

// waitOpeningFIFO waits until gprof is in its writing step, opening a
// FIFO that has no reader yet (the kernel's wait_for_partner), and
// reports whether it got there.
func waitOpeningFIFO(g *bgGprof) bool {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/wchan", g.cmd.Process.Pid))
		for _, task := range tasks {
			if b, _ := os.ReadFile(task); string(b) == "wait_for_partner" {
				return true
			}
		}
		if g.exited(10 * time.Millisecond) {
			return false
		}
	}
	return false
}

// TestSecondInterruptAbortsRecord: the first Ctrl-C stops recording, and a
// second one during the finishing steps (here: waiting for a reader of
// the output FIFO) ends gprof at once with exit 130.
func TestSecondInterruptAbortsRecord(t *testing.T) {
	spin := startSpin(t)
	dir := t.TempDir()
	fifo := filepath.Join(dir, "out.json")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	g := startGprof(t, nil, "record", "-q", "-p", strconv.Itoa(spin.Process.Pid), "-o", fifo)
	if g.exited(500 * time.Millisecond) {
		skipIfNoBackend(t, g.stderr.String())
		t.Fatalf("gprof ended by itself: %s", g.stderr.String())
	}
	g.cmd.Process.Signal(syscall.SIGINT)
	if !waitOpeningFIFO(g) {
		t.Fatalf("gprof did not wait for the FIFO's reader: %v %s", g.cmd.ProcessState, g.stderr.String())
	}
	g.cmd.Process.Signal(syscall.SIGINT)
	if !g.exited(3 * time.Second) {
		t.Fatal("gprof still running 3 s after a second SIGINT")
	}
	if code := g.cmd.ProcessState.ExitCode(); code != 130 {
		t.Errorf("exit %d, want 130", code)
	}
	if s := g.stderr.String(); strings.Count(s, "\n") != 1 || !strings.Contains(s, "interrupted") {
		t.Errorf("want one 'interrupted' line, got %q", s)
	}
	if st, _ := os.Lstat(fifo); st.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("the FIFO became %v", st.Mode())
	}
	assertUnharmed(t, spin.Process.Pid)
}

// TestQuitWhileRecording: SIGQUIT while recording a launched command ends
// the recording as Ctrl-C does (the command is sent SIGTERM, not left
// behind) and then quits: exit 131, one line, no goroutine dump, nothing
// written.
func TestQuitWhileRecording(t *testing.T) {
	out := filepath.Join(t.TempDir(), "q.json.gz")
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	// Not testdata/spin, which dies with its parent by itself.
	g := startGprof(t, pw, "record", "-q", "-o", out, "--", "sh", "-c", "echo ready; while :; do :; done")
	pw.Close()
	if line, _ := bufio.NewReader(pr).ReadString('\n'); strings.TrimSpace(line) != "ready" {
		<-g.done
		skipIfNoBackend(t, g.stderr.String())
		t.Fatalf("launched spin said %q; gprof: %s", line, g.stderr.String())
	}
	kids := childrenOf(g.cmd.Process.Pid)
	if len(kids) != 1 {
		t.Fatalf("gprof has children %v, want the launched command alone", kids)
	}
	t.Cleanup(func() { killAndForget(kids[0]) })
	time.Sleep(200 * time.Millisecond)
	g.cmd.Process.Signal(syscall.SIGQUIT)
	if !g.exited(10 * time.Second) {
		t.Fatal("gprof still running 10 s after SIGQUIT")
	}
	if code := g.cmd.ProcessState.ExitCode(); code != 131 {
		t.Errorf("exit %d, want 131", code)
	}
	if s := g.stderr.String(); strings.Count(s, "\n") != 1 || !strings.Contains(s, "interrupted by SIGQUIT") {
		t.Errorf("want one 'interrupted by SIGQUIT' line, got %.300q", s)
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("%s was written", out)
	}
	for i := 0; ; i++ {
		st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", kids[0]))
		if err != nil || strings.Contains(string(st), ") Z ") {
			break
		}
		if i == 100 {
			t.Errorf("the launched command is still running after gprof quit")
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestInterruptAfterRecordingEnded: when the recording ended by itself, a
// first Ctrl-C during the finishing steps does not lose the profile: gprof
// says another one would abort, and goes on to write it.
func TestInterruptAfterRecordingEnded(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "out.json")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	g := startGprof(t, nil, "record", "-o", fifo, "--", "true")
	if !waitOpeningFIFO(g) {
		skipIfNoBackend(t, g.stderr.String())
		t.Fatalf("gprof did not wait for the FIFO's reader: %s", g.stderr.String())
	}
	g.cmd.Process.Signal(syscall.SIGINT)
	time.Sleep(300 * time.Millisecond)
	if g.exited(0) {
		t.Fatalf("a first SIGINT after the recording ended aborted: %v %s", g.cmd.ProcessState, g.stderr.String())
	}
	got := readFIFO(fifo)
	if !g.exited(10 * time.Second) {
		t.Fatal("gprof did not finish once the FIFO had a reader")
	}
	if b := <-got; !bytes.Contains(b, []byte(`"meta"`)) {
		t.Errorf("the FIFO's reader got %.40q", b)
	}
	if !g.cmd.ProcessState.Success() {
		t.Errorf("gprof: %v", g.cmd.ProcessState)
	}
	if s := g.stderr.String(); !strings.Contains(s, "another SIGINT aborts") {
		t.Errorf("no notice that another SIGINT aborts: %q", s)
	}
}
