//go:build linux

package ptrace

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gprof-dev/gprof/attach/internal/proc"
	"github.com/gprof-dev/gprof/event"
)

// Stoppers adopting threads while the coordinator lists them: every
// thread ends with one shared state, and it is the one a stopper was told
// it adopted, if any was.
func TestAdoptionRace(t *testing.T) {
	for round := range 200 {
		pr := newSharedProc(1, true)
		pr.publishKnown(nil)
		const n = 150 // more than the slots: some collide
		tids := make([]int, n)
		for i := range tids {
			tids[i] = 1000 + i*7
		}
		var adopted [n]atomic.Pointer[shared] // what each stopper was told it owns
		var wg sync.WaitGroup
		for s := range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for pass := range 3 {
					for i, tid := range tids {
						if (i+s+pass)%2 == 0 || pr.knows(tid) || pr.slot(tid).Load() != nil {
							continue
						}
						th := &shared{tid: tid}
						if pr.tryAdopt(th) {
							if !adopted[i].CompareAndSwap(nil, th) {
								t.Errorf("round %d: tid %d adopted twice", round, tid)
							}
						}
						runtime.Gosched()
					}
				}
			}()
		}
		// The coordinator, listing again and again until it has them all.
		registered := map[int]*shared{}
		var known []int
		for len(known) < n {
			var release []*shared
			for _, tid := range tids {
				if registered[tid] != nil {
					continue
				}
				a, p, busy := pr.claim(tid)
				switch {
				case busy:
					continue
				case a != nil:
					registered[tid] = a
					release = append(release, a)
				default:
					registered[tid] = &shared{tid: tid}
					release = append(release, p)
				}
				known = append(known, tid)
			}
			slices.Sort(known)
			pr.publishKnown(known)
			for _, th := range release {
				pr.release(th)
			}
			runtime.Gosched()
		}
		wg.Wait()
		for i, tid := range tids {
			if a := adopted[i].Load(); a != nil && registered[tid] != a {
				t.Fatalf("round %d: tid %d: a stopper owns a shared state the coordinator did not register", round, tid)
			}
			if th := pr.slot(tid).Load(); th != nil {
				t.Fatalf("round %d: tid %d's slot is left holding %+v", round, tid, th)
			}
		}
	}
}

func TestAdoptionSlots(t *testing.T) {
	pr := newSharedProc(1, true)
	pr.publishKnown([]int{5})
	if pr.tryAdopt(&shared{tid: 5}) {
		t.Error("adopted a thread the coordinator knows")
	}
	a := &shared{tid: 7}
	if !pr.tryAdopt(a) {
		t.Fatal("could not adopt a new thread")
	}
	if pr.tryAdopt(&shared{tid: 7 + adoptSlots}) {
		t.Error("adopted into a slot another thread holds")
	}
	if _, _, busy := pr.claim(7 + adoptSlots); !busy {
		t.Error("the coordinator claimed a slot another thread holds")
	}
	if got, _, _ := pr.claim(7); got != a {
		t.Errorf("claim(7) = %v, want the adopted thread", got)
	}
	_, p, _ := pr.claim(9)
	if p == nil || pr.tryAdopt(&shared{tid: 9}) {
		t.Error("a stopper adopted a thread the coordinator is making")
	}
	pr.release(p)
	// Gone before it was registered: its slot is emptied, its owner told.
	pr.dropAdopted([]int{5})
	if !a.gone.Load() || pr.slot(7).Load() != nil {
		t.Error("a thread adopted and gone is left in its slot")
	}
}

func TestListTasksRaw(t *testing.T) {
	pr := newSharedProc(os.Getpid(), true)
	// The runtime may start a thread between the two listings: a few
	// tries.
	for try := 1; ; try++ {
		want, err := proc.ListTasks(os.Getpid())
		if err != nil {
			t.Fatal(err)
		}
		got, ok := listTasksRaw(pr.taskDir, make([]byte, 64), nil) // a small buffer: several reads
		if ok && slices.Equal(got, want) {
			break
		}
		if try == 3 {
			t.Fatalf("listTasksRaw = %v, %v; /proc lists %v", got, ok, want)
		}
	}
	if _, ok := listTasksRaw(append([]byte("/proc/0/task/"), 0), make([]byte, 1024), nil); ok {
		t.Error("listed the threads of no process")
	}
}

// A thread a stopper adopted after its process exec'd, whose first sample
// reaches the coordinator before any listing shows the exec: the exec is
// reported before the thread, and no later, so that the thread belongs to
// the new program. (Reported the other way round, the recording showed
// the thread twice, once under each program: TestFaultExec in CI.)
func TestAdoptedThreadAfterExec(t *testing.T) {
	target := exec.Command("sh", "-c", "read line; exec sleep 30")
	in, err := target.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := target.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { target.Process.Kill(); target.Wait() })
	pid := target.Process.Pid
	var events []event.Event
	s := &ptSampler{procs: map[int]*ptProc{}, pending: map[int]bool{}, buf: make([]byte, 4096),
		h: func(e event.Event) { events = append(events, e) }, interval: time.Millisecond}
	var stop atomic.Bool
	s.workers = []*worker{newWorker(s, 0, 0, &stop)}
	s.addProcess(pid, 0, false)
	pr := s.procs[pid]
	before := pr.exe

	in.Write([]byte("go\n"))
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		if id, ok := exeID(pid); ok && id != before {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the target did not exec")
		}
	}
	// A stopper adopts a thread of the new program...
	const tid = 1<<22 + 7 // above any pid_max: no such thread, which does not matter here
	adoptedAt := event.Now()
	sh := newShared(pr.sh, tid, ptSched{})
	sh.adoptedAt = adoptedAt
	if !pr.sh.tryAdopt(sh) {
		t.Fatal("could not adopt")
	}
	// ...whose first sample reaches the coordinator first.
	events = events[:0]
	if s.registerAdopted(pr, tid) == nil {
		t.Fatal("the adopted thread was not registered")
	}
	execAt, forkAt := int64(-1), int64(-1)
	for i, e := range events {
		switch e := e.(type) {
		case *event.Comm:
			if e.Exec && execAt < 0 {
				execAt = e.Time
				if forkAt >= 0 {
					t.Errorf("event %d: the exec is reported after the new thread", i)
				}
			}
		case *event.Fork:
			if e.Tid == tid {
				forkAt = e.Time
			}
		}
	}
	switch {
	case execAt < 0:
		t.Fatalf("no exec reported: %s", describe(events))
	case forkAt < 0:
		t.Fatalf("the new thread is not reported: %s", describe(events))
	case execAt > forkAt:
		t.Errorf("exec reported at %d, after the thread it started at %d", execAt, forkAt)
	}
}

func describe(events []event.Event) string {
	var out []string
	for _, e := range events {
		out = append(out, fmt.Sprintf("%T%+v", e, e))
	}
	return strings.Join(out, ", ")
}
