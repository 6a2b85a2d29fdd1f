//go:build linux

package proc

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestMain(m *testing.M) {
	// Launch re-executes the running binary as its helper; in tests that
	// binary is the test binary.
	ExecHelperMain()
	os.Exit(m.Run())
}

// TestLaunchOutlivesForkingThread: the kernel sends a parent-death signal
// when the thread that forked the child exits, not the process, and Go
// ends a thread whose goroutine exits locked to it (as the ptrace sampler
// may). A command launched from such a thread must live on.
func TestLaunchOutlivesForkingThread(t *testing.T) {
	type started struct {
		l   *Launched
		err error
	}
	ch := make(chan started)
	var launchLocked func()
	launchLocked = func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		if unix.Gettid() == os.Getpid() {
			// Go never ends the main thread; keep it busy so that the
			// launch happens on another one.
			done := make(chan struct{})
			go func() { launchLocked(); close(done) }()
			<-done
			runtime.UnlockOSThread()
			return
		}
		l, err := Launch([]string{"sleep", "30"}, nil, "")
		ch <- started{l, err}
	}
	go launchLocked()
	st := <-ch
	if st.err != nil {
		t.Fatal(st.err)
	}
	l := st.l
	defer l.Abort()
	time.Sleep(300 * time.Millisecond) // the forking thread is gone by now
	if s := ProcessState(l.Pid); s == 0 || s == 'Z' {
		t.Fatalf("the launch helper died (state %q) when the thread that started it exited", s)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	if err := l.Started(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	if s := ProcessState(l.Pid); s == 0 || s == 'Z' {
		t.Fatalf("the launched command died (state %q)", s)
	}
	syscall.Kill(l.Pid, syscall.SIGKILL)
	l.Wait()
}

// TestGainsPrivileges: a set-user-ID copy of true gains privileges at its
// exec, true itself does not.
func TestGainsPrivileges(t *testing.T) {
	truePath, err := exec.LookPath("true")
	if err != nil {
		t.Skip("no true")
	}
	suid := filepath.Join(t.TempDir(), "true-suid")
	data, err := os.ReadFile(truePath)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(suid, data, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(suid, 0o755|os.ModeSetuid); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]bool{truePath: false, suid: true} {
		l, err := Launch([]string{path}, nil, "")
		if err != nil {
			t.Fatal(err)
		}
		if got := l.GainsPrivileges(); got != want {
			t.Errorf("%s: GainsPrivileges %v, want %v", path, got, want)
		}
		l.Abort()
	}
}
