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
				t.Errorf("worker thread: %+v", ws)
			}
		})
	}
	if ran == 0 {
		t.Skip("no CPython")
	}
}
