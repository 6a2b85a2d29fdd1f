package python

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// sleeper has two threads wait in known Python frames: the main thread
// in outer -> inner -> time.sleep, another in worker -> time.sleep. It
// prints the worker's native thread id once both are there.
const sleeper = `import threading, time, sys
ready = threading.Event()
def worker():
    ready.set()
    time.sleep(1000)
def inner():
    print(tid, flush=True)
    time.sleep(1000)
def outer():
    inner()
t = threading.Thread(target=worker, daemon=True)
t.start()
ready.wait()
time.sleep(0.05)
tid = t.native_id if hasattr(t, "native_id") else 0
outer()
`

// memOf reads pid's memory one range at a time (ReadV reads the first
// only), as a Memory that batches nothing.
type memOf int

func (pid memOf) Read(addr uint64, p []byte) error {
	local := []unix.Iovec{{Base: &p[0]}}
	local[0].SetLen(len(p))
	n, err := unix.ProcessVMReadv(int(pid), local, []unix.RemoteIovec{{Base: uintptr(addr), Len: len(p)}}, 0)
	if err != nil {
		return err
	}
	if n != len(p) {
		return unix.EFAULT
	}
	return nil
}

func (pid memOf) ReadV(addrs []uint64, bufs [][]byte) int {
	if len(addrs) == 0 || pid.Read(addrs[0], bufs[0]) != nil {
		return 0
	}
	return 1
}

// TestReadLive reads the stacks of both threads of sleeper under every
// pyenv CPython: names, files, lines and the grouping by eval call.
func TestReadLive(t *testing.T) {
	root := os.Getenv("PYENV_ROOT")
	if root == "" {
		root = "/root/.pyenv"
	}
	dir := t.TempDir()
	script := filepath.Join(dir, "sleeper.py")
	if err := os.WriteFile(script, []byte(sleeper), 0o644); err != nil {
		t.Fatal(err)
	}
	ran := 0
	for _, v := range []string{"3.8.18", "3.9.18", "3.10.13", "3.11.7", "3.12.1", "3.13.0", "/usr/bin/python3"} {
		py := filepath.Join(root, "versions", v, "bin", "python3")
		if strings.HasPrefix(v, "/") {
			py = v
		}
		if _, err := os.Stat(py); err != nil {
			continue
		}
		ran++
		t.Run(v, func(t *testing.T) {
			cmd := exec.Command(py, script)
			out, _ := cmd.StdoutPipe()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { cmd.Process.Kill(); cmd.Wait() }()
			line, err := bufio.NewReader(out).ReadString('\n')
			if err != nil {
				t.Fatal(err)
			}
			worker, _ := strconv.Atoi(strings.TrimSpace(line))
			time.Sleep(20 * time.Millisecond)
			pid := cmd.Process.Pid
			r := NewReader()
			if st := r.Read(pid, pid, memOf(pid)); st != nil {
				t.Errorf("Read found an interpreter before Find: %+v", st)
			}
			if !r.Find(pid, memOf(pid)) {
				t.Fatalf("Find found no interpreter")
			}
			st := r.Read(pid, pid, memOf(pid))
			if st == nil {
				t.Fatalf("no Python stack for the main thread")
			}
			var names []string
			for _, f := range st.Frames {
				names = append(names, f.Code.Name+":"+strconv.Itoa(int(f.Line)))
				if f.Code.File != script {
					t.Errorf("frame %s in %q, want %s", f.Code.Name, f.Code.File, script)
				}
			}
			want := "inner:8 outer:10 <module>:16"
			if strings.Join(names, " ") != want {
				t.Errorf("main thread: %s, want %s (groups %v)", strings.Join(names, " "), want, st.Groups)
			}
			sum := 0
			for _, g := range st.Groups {
				sum += g
			}
			if sum != len(st.Frames) || len(st.Eval) == 0 {
				t.Errorf("groups %v for %d frames, eval %v", st.Groups, len(st.Frames), st.Eval)
			}
			if worker == 0 {
				return // 3.7: no native_id
			}
			ws := r.Read(pid, worker, memOf(pid))
			if ws == nil || len(ws.Frames) == 0 || ws.Frames[0].Code.Name != "worker" || ws.Frames[0].Line != 5 {
				t.Fatalf("worker thread: %+v", ws)
			}
			checkWalk(t, r, pid, worker, ws)
		})
	}
	if ran == 0 {
		t.Skip("no CPython")
	}
}

// checkWalk follows Walk's description of thread tid by hand, as the
// perf backend's BPF program does: from the thread list to the thread's
// state by its id, and from there to its innermost frame, ws's first.
// A copy of the memory that says where the thread state is gets the
// stack even while a search for the thread is being waited out.
func checkWalk(t *testing.T, r *Reader, pid, tid int, ws *Stack) {
	t.Helper()
	w, ok := r.Walk(pid, tid)
	if !ok || w.TState == 0 || w.Threads == 0 {
		t.Fatalf("Walk: %+v %v", w, ok)
	}
	mem := memOf(pid)
	ptr := func(addr uint64) uint64 {
		var b [8]byte
		if err := mem.Read(addr, b[:]); err != nil {
			t.Fatalf("read %#x: %v", addr, err)
		}
		return u64(b[:], 0)
	}
	found := uint64(0)
	for ts, n := ptr(w.Threads), 0; ts != 0 && n < 64; ts, n = ptr(ts+uint64(w.Next)), n+1 {
		id := ptr(ts + uint64(w.ThreadID))
		if w.IDIndirect {
			id = ptr(id+uint64(w.IDOffset)) & 0xffffffff
		}
		if int(id) == tid {
			found = ts
		}
	}
	if found != w.TState {
		t.Errorf("thread list gives %#x for thread %d, Walk %#x", found, tid, w.TState)
	}
	frame := ptr(w.TState + uint64(w.FrameAt))
	if w.CFrameCurrent >= 0 {
		frame = ptr(frame + uint64(w.CFrameCurrent))
	}
	// 3.12+: the innermost frame may be a shim under the eval call's.
	for n := 0; frame != 0 && frame != ws.Frames[0].Addr && n < 4; n++ {
		frame = ptr(frame + uint64(w.Back))
	}
	if frame != ws.Frames[0].Addr {
		t.Errorf("Walk leads to frame %#x, the stack's first is %#x", frame, ws.Frames[0].Addr)
	}
	if w.TStateSpan <= 0 || w.FrameSpan <= 0 || w.FrameAt+8 > int64(w.TStateSpan) || w.Back+8 > int64(w.FrameSpan) {
		t.Errorf("spans: %+v", w)
	}

	r2 := NewReader()
	if !r2.Find(pid, mem) {
		t.Fatal("Find found no interpreter")
	}
	p := r2.process(pid)
	p.misses[tid] = time.Now() // a search that found nothing lately
	if st := r2.Read(pid, tid, mem); st != nil {
		t.Fatalf("a thread missed lately was searched again: %+v", st)
	}
	st := r2.Read(pid, tid, copyOf{memOf(pid), w.TState})
	if st == nil || len(st.Frames) != len(ws.Frames) || st.Frames[0].Code.Name != ws.Frames[0].Code.Name {
		t.Errorf("read through a copy: %+v, want %+v", st, ws)
	}
}

// copyOf is a Copy of pid's memory holding a thread state at ts.
type copyOf struct {
	memOf
	ts uint64
}

func (c copyOf) ThreadState() uint64 { return c.ts }

// Find reads a process's /proc/PID/exe (to notice an exec) at most every
// exeEvery: it is called at every sample of a process that runs no
// interpreter.
func TestFindReadsExeSeldom(t *testing.T) {
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
	pid := cmd.Process.Pid
	r := NewReader()
	now := time.Unix(1000, 0)
	r.now = func() time.Time { return now }
	read := func() time.Time { return r.process(pid).exeRead }
	for _, step := range []struct {
		after time.Duration
		read  bool
	}{{0, true}, {time.Millisecond, false}, {exeEvery - time.Millisecond, true}, {exeEvery / 2, false}} {
		now = now.Add(step.after)
		before := read()
		if r.Find(pid, memOf(pid)) {
			t.Fatal("found an interpreter in sleep")
		}
		if got := read() != before; got != step.read {
			t.Errorf("%v on: read /proc/PID/exe %v, want %v", step.after, got, step.read)
		}
	}
}
