package record

import (
	"fmt"
	"slices"
	"testing"

	"github.com/gprof-dev/gprof/event"
	"github.com/gprof-dev/gprof/profile"
)

const ms = int64(1e6)

func newTestBuilder() *builder {
	return newBuilder(1000*ms, &profile.Profile{})
}

func sample(t int64, pid, tid int, stack ...uint64) *event.Sample {
	return &event.Sample{Time: t, Pid: pid, Tid: tid, CPUDelta: ms, Stack: stack}
}

func mapEv(t int64, pid int, start, end uint64, path string) *event.Map {
	return &event.Map{Time: t, Pid: pid, Start: start, End: end, Path: path}
}

func procNamed(t *testing.T, procs []*proc, name string) []*proc {
	t.Helper()
	var out []*proc
	for _, pr := range procs {
		if pr.p.Name == name {
			out = append(out, pr)
		}
	}
	return out
}

// A launched command: the helper's mappings before exec are dropped, the
// new image's (reported at or after the exec, in either order) are kept,
// and the process is named from its argv.
func TestBuilderLaunchExec(t *testing.T) {
	for _, order := range []string{"maps after exec (perf)", "maps with exec (ptrace)"} {
		t.Run(order, func(t *testing.T) {
			b := newTestBuilder()
			b.handle(mapEv(1001*ms, 10, 0x1000, 0x2000, "/usr/bin/gprof"))
			execAt := 1002 * ms
			if order == "maps with exec (ptrace)" {
				b.handle(mapEv(execAt, 10, 0x5000, 0x6000, "/bin/app"))
			}
			b.handle(&event.Comm{Time: execAt, Pid: 10, Tid: 10, Name: "app", Exec: true, Argv: []string{"/bin/app", "-x"}})
			if order == "maps after exec (perf)" {
				b.handle(mapEv(execAt+1, 10, 0x5000, 0x6000, "/bin/app"))
			}
			b.handle(sample(1003*ms, 10, 10, 0x5010))
			procs := b.finish(1010 * ms)
			if len(procs) != 1 {
				t.Fatalf("%d processes, want 1", len(procs))
			}
			pr := procs[0]
			if pr.p.Name != "app" {
				t.Errorf("name %q, want app", pr.p.Name)
			}
			if len(pr.mappings) != 1 || pr.mappings[0].Path != "/bin/app" {
				t.Errorf("mappings %+v, want only /bin/app", pr.mappings)
			}
			th := pr.p.Threads[0]
			if !th.Main || th.Samples.Len() != 1 || th.Samples.Time[0] != 3*ms {
				t.Errorf("thread %+v", th)
			}
		})
	}
}

// A sample taken in the kernel during the exec, after the old address
// space is gone but before the new program's registers are set, carries
// the old program's user address: it counts as the kernel's time in the
// exec, without that address, on the [exec] stand-in. Once the thread is
// seen in the new image, in-kernel samples keep their user stacks, mapped
// or not. A sample in the kernel with no user stack at all (a thread in
// its exit, after its user memory is gone) stands on [exit].
func TestBuilderStaleExecSample(t *testing.T) {
	b := newTestBuilder()
	b.handle(mapEv(1001*ms, 10, 0x400000, 0x800000, "/usr/bin/gprof"))
	b.handle(&event.Comm{Time: 1002 * ms, Pid: 10, Tid: 10, Name: "app", Exec: true})
	stale := sample(1002*ms+1, 10, 10, 0x40de0e)
	stale.InKernel = true
	b.handle(stale)
	b.handle(mapEv(1002*ms+2, 10, 0x5000, 0x6000, "/bin/app"))
	b.handle(sample(1003*ms, 10, 10, 0x5010))
	later := sample(1004*ms, 10, 10, 0x9000) // JIT code, say
	later.InKernel = true
	b.handle(later)
	exiting := sample(1005*ms, 10, 10)
	exiting.InKernel, exiting.NoUserRegs = true, true
	b.handle(exiting)
	unwalked := sample(1006*ms, 10, 10) // no user part came (ETW), no reason known
	unwalked.InKernel = true
	b.handle(unwalked)
	kworker := sample(1005*ms, 99, 99, 0xffffffff81000000)
	kworker.InKernel, kworker.KernelFrames, kworker.NoUserRegs = true, 1, true
	b.handle(kworker)
	if th := b.procs[99].p.Threads[0]; th.Stacks.Prefix[th.Samples.Stack[0]] != profile.NoStack {
		t.Errorf("a kernel thread's sample stands on %+v", th.Frames.Frames[th.Stacks.Frame[th.Stacks.Prefix[th.Samples.Stack[0]]]])
	}
	th := b.procs[10].p.Threads[0]
	var got [][]string
	for i := range th.Samples.Len() {
		var frames []string
		for j := th.Samples.Stack[i]; j >= 0; j = th.Stacks.Prefix[j] {
			f := th.Frames.Frames[th.Stacks.Frame[j]]
			frames = append(frames, fmt.Sprintf("%s%#x", f.Label, f.Address))
		}
		got = append(got, frames)
	}
	want := [][]string{{profile.KernelLabel + "0x0", profile.ExecLabel + "0x0"}, {"0x5010"}, {profile.KernelLabel + "0x0", "0x9000"},
		{profile.KernelLabel + "0x0", profile.ExitLabel + "0x0"}, {profile.KernelLabel + "0x0"}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("samples %v, want %v", got, want)
	}
}

// An exec after samples splits the pid into two processes: what ran
// before keeps the old name and mappings.
func TestBuilderExecAfterSamples(t *testing.T) {
	b := newTestBuilder()
	b.handle(&event.Comm{Time: 1000 * ms, Pid: 7, Tid: 7, Name: "sh", Argv: []string{"sh"}})
	b.handle(mapEv(1000*ms, 7, 0x1000, 0x2000, "/bin/sh"))
	b.handle(sample(1001*ms, 7, 7, 0x1010))
	b.handle(&event.Comm{Time: 1002 * ms, Pid: 7, Tid: 7, Name: "split", Exec: true, Argv: []string{"./split"}})
	b.handle(mapEv(1002*ms+1, 7, 0x8000, 0x9000, "/tmp/split"))
	b.handle(sample(1003*ms, 7, 7, 0x8010))
	procs := b.finish(1010 * ms)
	if len(procs) != 2 {
		t.Fatalf("%d processes, want 2", len(procs))
	}
	sh, split := procNamed(t, procs, "sh"), procNamed(t, procs, "split")
	if len(sh) != 1 || len(split) != 1 {
		t.Fatalf("processes %q and %q", procs[0].p.Name, procs[1].p.Name)
	}
	if sh[0].p.End != 2*ms {
		t.Errorf("sh ended at %d, want at the exec", sh[0].p.End)
	}
	if sh[0].p.Exec || !split[0].p.Exec {
		t.Errorf("exec flags: sh %v, split %v; want false, true", sh[0].p.Exec, split[0].p.Exec)
	}
	if len(sh[0].mappings) != 1 || sh[0].mappings[0].Path != "/bin/sh" ||
		len(split[0].mappings) != 1 || split[0].mappings[0].Path != "/tmp/split" {
		t.Errorf("mappings: sh %+v, split %+v", sh[0].mappings, split[0].mappings)
	}
}

// A forked child inherits its parent's mappings (no records are sent for
// them) and name; a new thread inherits its creator's name.
func TestBuilderForkAndClone(t *testing.T) {
	b := newTestBuilder()
	b.handle(&event.Comm{Time: 1000 * ms, Pid: 1, Tid: 1, Name: "srv", Argv: []string{"srv"}})
	b.handle(mapEv(1000*ms, 1, 0x1000, 0x2000, "/bin/srv"))
	b.handle(&event.Fork{Time: 1001 * ms, Pid: 1, Tid: 2, Ppid: 1, Ptid: 1})
	b.handle(&event.Fork{Time: 1002 * ms, Pid: 3, Tid: 3, Ppid: 1, Ptid: 1})
	b.handle(sample(1003*ms, 3, 3, 0x1010))
	b.handle(&event.Exit{Time: 1004 * ms, Pid: 1, Tid: 2})
	procs := b.finish(1010 * ms)
	if len(procs) != 2 {
		t.Fatalf("%d processes, want 2", len(procs))
	}
	parent, child := procs[0], procs[1]
	if len(parent.p.Threads) != 2 || parent.threads[2].Name != "srv" || parent.threads[2].End != 4*ms {
		t.Errorf("parent threads: %+v", parent.p.Threads)
	}
	if child.p.Pid != 3 || child.p.Name != "srv" || len(child.mappings) != 1 {
		t.Errorf("child %+v with mappings %+v", child.p, child.mappings)
	}
}

// Kernel frames come first and are categorized; samples intern stacks.
func TestBuilderKernelFramesAndInterning(t *testing.T) {
	b := newTestBuilder()
	s := sample(1001*ms, 5, 5, 0xffffffff81000010, 0x1010, 0x1020)
	s.KernelFrames = 1
	b.handle(s)
	s2 := *s
	s2.Time = 1002 * ms
	b.handle(&s2)
	th := b.finish(1003 * ms)[0].p.Threads[0]
	if th.Samples.Len() != 2 || th.Samples.Stack[0] != th.Samples.Stack[1] {
		t.Fatalf("samples %+v: identical stacks must intern to one", th.Samples)
	}
	if th.Stacks.Len() != 3 || th.Frames.Len() != 3 {
		t.Errorf("%d stacks and %d frames, want 3 and 3", th.Stacks.Len(), th.Frames.Len())
	}
	leaf := th.Frames.Frames[th.Stacks.Frame[th.Samples.Stack[0]]]
	if leaf.Category != profile.CategoryKernel || leaf.Address != 0xffffffff81000010 {
		t.Errorf("leaf %+v, want the kernel frame", leaf)
	}
}

// With a --keep window, old samples go and memory is compacted, while the
// newest stay.
func TestBuilderKeepWindow(t *testing.T) {
	b := newTestBuilder()
	b.bound = bound{keep: 100 * ms}
	for i := int64(0); i < 3000; i++ {
		b.handle(sample(1000*ms+i*ms, 9, 9, 0x1000+uint64(i%50)*16, 0x2000+uint64(i%7)*16))
	}
	th := b.finish(4000 * ms)[0].p.Threads[0]
	first, last := th.Samples.Time[0], th.Samples.Time[th.Samples.Len()-1]
	if last != 2999*ms {
		t.Errorf("newest sample at %d, want %d", last, 2999*ms)
	}
	if first < 2999*ms-100*ms-checkInterval-100*ms/8 {
		t.Errorf("oldest kept sample at %d ms: the window is 100 ms", first/ms)
	}
	if b.bound.discarded == 0 || b.bound.discardedBefore == 0 {
		t.Errorf("nothing discarded: %+v", b.bound)
	}
}

// Kernel frames are the first KernelFrames, and with KernelFrom every
// address in the kernel's half, as in a Windows stack that calls back
// into user mode; a label names a user frame in JIT code, never a kernel
// one.
func TestBuilderKernelFromAndLabels(t *testing.T) {
	b := newTestBuilder()
	b.label = func(pid int, a uint64) (string, bool) {
		return "Jitted", pid == 10 && (a == 0x5000 || a == 0xFFFF800000001000)
	}
	s := sample(1001*ms, 10, 10, 0xFFFF800000001000, 0x1000, 0xFFFF800000002000, 0x5000, 0x2000)
	s.KernelFrames, s.KernelFrom, s.InKernel = 1, 0xFFFF800000000000, true
	b.handle(s)
	th := b.procs[10].p.Threads[0]
	var got []string
	for i := th.Samples.Stack[0]; i >= 0; i = th.Stacks.Prefix[i] {
		f := th.Frames.Frames[th.Stacks.Frame[i]]
		got = append(got, fmt.Sprintf("%s%#x:%d", f.Label, f.Address, f.Category))
	}
	want := []string{"0xffff800000001000:2", "0x1000:1", "0xffff800000002000:2", "Jitted0x0:1", "0x2000:1"}
	if !slices.Equal(got, want) {
		t.Errorf("frames %v, want %v", got, want)
	}
}

// A process's exit status is the one its Exit says, when known.
func TestBuilderExitCode(t *testing.T) {
	b := newTestBuilder()
	b.handle(sample(1001*ms, 10, 11, 0x1000))
	b.handle(sample(1001*ms, 12, 13, 0x1000))
	b.handle(&event.Exit{Time: 1002 * ms, Pid: 10, Tid: 10, ExitCode: 3, ExitKnown: true})
	b.handle(&event.Exit{Time: 1002 * ms, Pid: 12, Tid: 12})
	procs := b.finish(1003 * ms)
	if procs[0].p.ExitCode != 3 || procs[1].p.ExitCode != -1 || procs[0].p.End != 2*ms {
		t.Errorf("exit codes %d and %d, want 3 and -1 (unknown)", procs[0].p.ExitCode, procs[1].p.ExitCode)
	}
}

// A thread sampled after its process's main thread exited (exit_group ends
// the leader first) belongs to that process, with its names and mappings,
// not to a new nameless one (issue 18: go build had 3 to 10 processes
// named ? with one frame at an unnamed 0x49feb7).
func TestBuilderThreadOutlivesLeader(t *testing.T) {
	b := newTestBuilder()
	b.handle(mapEv(1001*ms, 10, 0x5000, 0x6000, "/bin/app"))
	b.handle(&event.Comm{Time: 1001 * ms, Pid: 10, Tid: 10, Name: "app", Exec: true, Argv: []string{"/bin/app"}})
	b.handle(&event.Fork{Time: 1002 * ms, Pid: 10, Ppid: 10, Tid: 11, Ptid: 10})
	b.handle(sample(1003*ms, 10, 10, 0x5010))
	b.handle(&event.Exit{Time: 1004 * ms, Pid: 10, Tid: 10})
	b.handle(sample(1005*ms, 10, 11, 0x5020))
	procs := b.finish(1010 * ms)
	if len(procs) != 1 || procs[0].p.Name != "app" {
		for _, pr := range procs {
			t.Logf("process %d %q: %d threads", pr.p.Pid, pr.p.Name, len(pr.p.Threads))
		}
		t.Fatalf("%d processes, want app alone", len(procs))
	}
	pr := procs[0].p
	var n int
	for _, th := range pr.Threads {
		n += th.Samples.Len()
		if th.Tid == 11 && (th.Samples.Len() != 1 || th.End < 5*ms) {
			t.Errorf("thread 11: %d samples, end %d", th.Samples.Len(), th.End)
		}
	}
	if n != 2 || pr.End < 5*ms {
		t.Errorf("%d samples, process end %d", n, pr.End)
	}

	// A new process that takes the pid is a process of its own.
	b = newTestBuilder()
	b.handle(&event.Comm{Time: 1001 * ms, Pid: 10, Tid: 10, Name: "app", Exec: true})
	b.handle(sample(1002*ms, 10, 10, 0x5010))
	b.handle(&event.Exit{Time: 1003 * ms, Pid: 10, Tid: 10})
	b.handle(&event.Fork{Time: 1004 * ms, Pid: 10, Ppid: 1, Tid: 10, Ptid: 1})
	b.handle(sample(1005*ms, 10, 10, 0x5010))
	if procs := b.finish(1010 * ms); len(procs) != 2 {
		t.Errorf("%d processes, want the old and the new", len(procs))
	}
}

// Records of a process after its main thread exited, of a thread not seen
// before (its clone record lost, or read after), a thread's comm and a
// mapping, are that process's: no new nameless process takes them (issue
// 26: go build -a net/http had a process with no name in one run of five),
// and every thread has a name.
func TestBuilderUnseenThreadAfterLeader(t *testing.T) {
	b := newTestBuilder()
	b.handle(&event.Comm{Time: 1001 * ms, Pid: 10, Tid: 10, Name: "app", Exec: true, Argv: []string{"/bin/app"}})
	b.handle(sample(1002*ms, 10, 10, 0x5010))
	b.handle(&event.Exit{Time: 1003 * ms, Pid: 10, Tid: 10})
	b.handle(sample(1004*ms, 10, 12, 0x5020))
	b.handle(mapEv(1005*ms, 10, 0x7000, 0x8000, "/lib/x.so"))
	b.handle(&event.Comm{Time: 1006 * ms, Pid: 10, Tid: 13, Name: "worker"})
	b.handle(sample(1007*ms, 10, 13, 0x5020))
	procs := b.finish(1010 * ms)
	if len(procs) != 1 {
		for _, pr := range procs {
			t.Logf("process %d %q: %d threads", pr.p.Pid, pr.p.Name, len(pr.p.Threads))
		}
		t.Fatalf("%d processes, want app alone", len(procs))
	}
	pr := procs[0].p
	if pr.Name != "app" || len(pr.Threads) != 3 || pr.End < 7*ms {
		t.Errorf("process %q, %d threads, end %d: want app, 3 threads, end at 7 ms or later", pr.Name, len(pr.Threads), pr.End)
	}
	for _, th := range pr.Threads {
		want := map[int]string{10: "app", 12: "app", 13: "worker"}[th.Tid]
		if th.Name != want {
			t.Errorf("thread %d named %q, want %q", th.Tid, th.Name, want)
		}
	}
}
