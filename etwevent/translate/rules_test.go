package translate

import (
	"encoding/binary"
	"fmt"
	"reflect"
	"testing"
	"unicode/utf16"

	"github.com/gprof-dev/gprof/etwevent"
	"github.com/gprof-dev/gprof/event"
	"github.com/gprof-dev/gprof/event/eventtest"
	"github.com/gprof-dev/gprof/objfile"
)

// Payload builders for the real-time events the translator's rules are
// about, in the layouts package github.com/gprof-dev/gprof/etw decodes (64-bit).

type payload []byte

func (p payload) u16(v uint16) payload { return binary.LittleEndian.AppendUint16(p, v) }
func (p payload) u32(v uint32) payload { return binary.LittleEndian.AppendUint32(p, v) }
func (p payload) u64(v uint64) payload { return binary.LittleEndian.AppendUint64(p, v) }
func (p payload) wstr(s string) payload {
	for _, c := range utf16.Encode([]rune(s)) {
		p = p.u16(c)
	}
	return p.u16(0)
}

func rtEvent(g etwevent.GUID, opcode, version uint8, time int64, p payload) *etwevent.Event {
	return &etwevent.Event{HeaderType: etwevent.HeaderEventHeader64, Ptr64: true, Provider: g, Opcode: opcode, Version: version, Time: time, Payload: p}
}

func procEvent(opcode uint8, time int64, pid, ppid uint32, name, cmdline string) *etwevent.Event {
	p := payload{}.u64(0).u32(pid).u32(ppid).u32(1).u32(0).u64(0).u32(0).u32(0)
	p = append(append(p, name...), 0)
	return rtEvent(etwevent.ProcessGUID, opcode, 4, time, p.wstr(cmdline))
}

func threadEvent(opcode uint8, time int64, pid, tid uint32) *etwevent.Event {
	return rtEvent(etwevent.ThreadGUID, opcode, 3, time, payload{}.u32(pid).u32(tid))
}

func sampleEvent(time int64, tid uint32, ip uint64) *etwevent.Event {
	return rtEvent(etwevent.PerfInfoGUID, 46, 2, time, payload{}.u64(ip).u32(tid).u16(1).u16(0))
}

func stackEvent(time, sampleTime int64, pid, tid uint32, frames ...uint64) *etwevent.Event {
	p := payload{}.u64(uint64(sampleTime)).u32(pid).u32(tid)
	for _, f := range frames {
		p = p.u64(f)
	}
	return rtEvent(etwevent.StackWalkGUID, 32, 2, time, p)
}

func imageEvent(opcode uint8, time int64, pid uint32, base, size uint64, file string) *etwevent.Event {
	p := payload{}.u64(base).u64(size).u32(pid).u32(0).u32(0x5f000000).u32(0).u64(base).u64(0).u64(0)
	return rtEvent(etwevent.ImageGUID, opcode, 3, time, p.wstr(file))
}

const (
	kAddr = 0xFFFFF80000001000
	uAddr = 0x00007FF600001000
)

func newRuleTranslator(out *eventtest.Collector, kernel bool, targets ...int) *Translator {
	return New(out.Handle, Options{Targets: targets, ToNS: func(t int64) int64 { return t * 100 }, Interval: 1e6, Kernel: kernel})
}

// TestETWRulesChildrenAndFiltering: samples of other processes are
// dropped; a process a target starts is recorded too, with a Fork, and
// its images and threads; the translator is done when all have exited.
func TestETWRulesChildrenAndFiltering(t *testing.T) {
	var out eventtest.Collector
	tr := newRuleTranslator(&out, false, 100)
	for _, e := range []*etwevent.Event{
		procEvent(3, 1, 100, 4, "app.exe", `"C:\app.exe" -x "a b"`),
		threadEvent(3, 1, 100, 101),
		procEvent(3, 1, 200, 4, "other.exe", ""),
		threadEvent(3, 1, 200, 201),
		imageEvent(3, 1, 100, 0x140000000, 0x10000, `\Device\HarddiskVolume2\app.exe`),
		imageEvent(3, 1, 200, 0x140000000, 0x10000, `\Device\HarddiskVolume2\other.exe`),
		sampleEvent(10, 101, uAddr),
		sampleEvent(11, 201, uAddr),
		procEvent(1, 20, 300, 100, "child.exe", "child.exe"),
		threadEvent(1, 20, 300, 301),
		sampleEvent(30, 301, uAddr+8),
		threadEvent(2, 40, 300, 301),
		procEvent(2, 40, 300, 100, "child.exe", ""),
	} {
		tr.Event(e, 0)
	}
	if tr.Done() {
		t.Error("Done with the first target still running")
	}
	tr.Event(procEvent(2, 50, 100, 4, "app.exe", ""), 0)
	tr.Flush()
	if !tr.Done() {
		t.Error("not Done after every target exited")
	}
	var pids []int
	for _, s := range out.Samples {
		pids = append(pids, s.Pid)
	}
	if !reflect.DeepEqual(pids, []int{100, 300}) {
		t.Errorf("samples of pids %v, want 100 and its child 300 only", pids)
	}
	// The child; its first thread is its main thread, reported with
	// the pid as tid, not as a new thread.
	if len(out.Forks) != 1 || out.Forks[0] != (event.Fork{Time: 2000, Pid: 300, Tid: 300, Ppid: 100, Ptid: 100}) {
		t.Errorf("forks %+v", out.Forks)
	}
	if len(out.Maps) != 1 || out.Maps[0].Pid != 100 || out.Maps[0].Start != 0x140000000 || out.Maps[0].End != 0x140010000 {
		t.Errorf("maps %+v, want app.exe's only", out.Maps)
	}
	// The image's name stands for argv[0], which the parent chose.
	if len(out.Comms) == 0 || !reflect.DeepEqual(out.Comms[0].Argv, []string{"app.exe", "-x", "a b"}) {
		t.Errorf("comms %+v", out.Comms)
	}
	want := []event.Exit{{Time: 4000, Pid: 300, Tid: 300, ExitKnown: true}, {Time: 5000, Pid: 100, Tid: 100, ExitKnown: true}}
	if !reflect.DeepEqual(out.Exits, want) {
		t.Errorf("exits %+v, want the child's and the target's, not the child's main thread's apart", out.Exits)
	}
	if out.Samples[1].Tid != 300 {
		t.Errorf("the child's main thread's sample has tid %d, want the pid", out.Samples[1].Tid)
	}
}

// TestETWRulesStackParts: a sample taken in the kernel gets its kernel
// part at once and its user part when the thread returns to user mode;
// they are joined, the kernel frames kept or dropped by --kernel.
func TestETWRulesStackParts(t *testing.T) {
	for _, kernel := range []bool{true, false} {
		var out eventtest.Collector
		tr := newRuleTranslator(&out, kernel, 100)
		for _, e := range []*etwevent.Event{
			procEvent(3, 1, 100, 4, "app.exe", ""),
			threadEvent(3, 1, 100, 101),
			sampleEvent(10, 101, kAddr),
			stackEvent(10, 10, 100, 101, kAddr, kAddr+0x10),
		} {
			tr.Event(e, 3)
		}
		if len(out.Samples) != 0 {
			t.Fatal("a sample in the kernel was sent before its user part came")
		}
		tr.Event(stackEvent(12, 10, 100, 101, uAddr, uAddr+0x20), 3)
		if len(out.Samples) != 1 {
			t.Fatalf("%d samples after the user part came, want 1", len(out.Samples))
		}
		s := out.Samples[0]
		want := []uint64{uAddr, uAddr + 0x20}
		nk := 0
		if kernel {
			want, nk = []uint64{kAddr, kAddr + 0x10, uAddr, uAddr + 0x20}, 2
		}
		if !reflect.DeepEqual(s.Stack, want) || s.KernelFrames != nk || !s.InKernel || s.CPU != 3 || s.CPUDelta != 1e6 || s.Time != 1000 {
			t.Errorf("kernel %v: sample %+v, want stack %x", kernel, s, want)
		}
	}
}

// TestETWRulesOneUserPartForSeveral: a thread sampled twice in the kernel
// gets one user part when it returns to user mode, for the later sample;
// it is the user stack of both.
func TestETWRulesOneUserPartForSeveral(t *testing.T) {
	var out eventtest.Collector
	tr := newRuleTranslator(&out, true, 100)
	for _, e := range []*etwevent.Event{
		procEvent(3, 1, 100, 4, "app.exe", ""),
		threadEvent(3, 1, 100, 101),
		sampleEvent(10, 101, kAddr),
		stackEvent(10, 10, 100, 101, kAddr),
		sampleEvent(15, 101, kAddr+8),
		stackEvent(15, 15, 100, 101, kAddr+8),
	} {
		tr.Event(e, 0)
	}
	if len(out.Samples) != 0 {
		t.Fatalf("%d samples sent before their user part", len(out.Samples))
	}
	tr.Event(stackEvent(16, 15, 100, 101, uAddr), 0)
	if len(out.Samples) != 2 || !reflect.DeepEqual(out.Samples[0].Stack, []uint64{kAddr, uAddr}) ||
		!reflect.DeepEqual(out.Samples[1].Stack, []uint64{kAddr + 8, uAddr}) {
		t.Fatalf("samples %+v, want both with the one user part", out.Samples)
	}
}

// TestETWRulesNoUserPart: a sample whose user part never comes is sent
// with what it has after maxWait, and at the end.
func TestETWRulesNoUserPart(t *testing.T) {
	var out eventtest.Collector
	tr := newRuleTranslator(&out, true, 100)
	tr.maxWait = 100
	for _, e := range []*etwevent.Event{
		procEvent(3, 1, 100, 4, "app.exe", ""),
		threadEvent(3, 1, 100, 101),
		threadEvent(3, 1, 100, 102),
		sampleEvent(10, 101, kAddr),
		stackEvent(10, 10, 100, 101, kAddr),
		sampleEvent(20, 102, uAddr),
		stackEvent(20, 20, 100, 102, uAddr),
	} {
		tr.Event(e, 0)
	}
	if len(out.Samples) != 0 {
		t.Fatalf("samples %+v sent while the first waits for its user part", out.Samples)
	}
	tr.Event(threadEvent(3, 200, 100, 103), 0) // time passes
	if len(out.Samples) != 2 || !reflect.DeepEqual(out.Samples[0].Stack, []uint64{kAddr}) || out.Samples[1].Tid != 102 {
		t.Fatalf("samples %+v, want the waiting one sent after maxWait, in order", out.Samples)
	}
	tr.Event(sampleEvent(300, 102, kAddr), 0)
	tr.Event(stackEvent(300, 300, 100, 102, kAddr), 0)
	tr.Flush()
	if len(out.Samples) != 3 {
		t.Fatalf("%d samples, want the last sent by Flush", len(out.Samples))
	}
}

// TestETWRulesLateThreadStart: a new thread's first samples can come
// before its start event (buffers of different CPUs arrive out of order);
// they are kept once the start event says whose they are.
func TestETWRulesLateThreadStart(t *testing.T) {
	var out eventtest.Collector
	tr := newRuleTranslator(&out, false, 100)
	for _, e := range []*etwevent.Event{
		procEvent(3, 1, 100, 4, "app.exe", ""),
		sampleEvent(10, 105, uAddr),
		sampleEvent(11, 205, uAddr),
		threadEvent(1, 5, 100, 105),
		threadEvent(1, 5, 200, 205),
	} {
		tr.Event(e, 0)
	}
	tr.Flush()
	// 105 is 100's first thread: its main thread, reported as tid 100.
	if len(out.Samples) != 1 || out.Samples[0].Tid != 100 || out.Samples[0].Pid != 100 {
		t.Errorf("samples %+v, want thread 105's only", out.Samples)
	}
}

func TestSplitCommandLine(t *testing.T) {
	got := splitCommandLine(`  "C:\Program Files\x.exe"  a "b c"d  `)
	if want := []string{`C:\Program Files\x.exe`, "a", "b cd"}; !reflect.DeepEqual(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestETWRulesMainThreadOutOfOrder: the main thread is the one that
// started first, even when another CPU's buffer brings a later thread's
// start (and samples) first.
func TestETWRulesMainThreadOutOfOrder(t *testing.T) {
	var out eventtest.Collector
	tr := newRuleTranslator(&out, false, 100)
	tr.maxWait = 50
	for _, e := range []*etwevent.Event{
		procEvent(1, 1, 300, 100, "child.exe", "child.exe"),
		threadEvent(1, 5, 300, 302),
		sampleEvent(6, 302, uAddr),
		stackEvent(6, 6, 300, 302, uAddr),
		threadEvent(1, 2, 300, 301),
		sampleEvent(7, 301, uAddr),
		stackEvent(7, 7, 300, 301, uAddr),
	} {
		tr.Event(e, 0)
	}
	if len(out.Samples) != 0 {
		t.Fatalf("samples %+v sent while the main thread may still change", out.Samples)
	}
	tr.Event(threadEvent(3, 100, 300, 303), 0) // time passes
	if len(out.Samples) != 2 || out.Samples[0].Tid != 302 || out.Samples[1].Tid != 300 {
		t.Fatalf("samples %+v, want thread 302 as itself and 301 (started first) as the main thread", out.Samples)
	}
}

func endEvent(time int64, pid uint32, status uint32) *etwevent.Event {
	p := payload{}.u64(0).u32(pid).u32(4).u32(1).u32(status).u64(0).u32(0).u32(0)
	p = append(append(p, "x.exe"...), 0)
	return rtEvent(etwevent.ProcessGUID, 2, 4, time, p.wstr(""))
}

func newFileTranslator(out *eventtest.Collector) *Translator {
	return New(out.Handle, Options{AllProcesses: true, KeepTids: true, Start: 1,
		ToNS: func(t int64) int64 { return t * 100 }, Interval: 1e6, Kernel: true})
}

// TestETWRulesWholeTrace: a file's translation keeps every process,
// reports threads by their own tids and rundowns as there since the
// trace's start, names processes by their image, gives every process the
// kernel's images, and ends a process no earlier than its last sample.
func TestETWRulesWholeTrace(t *testing.T) {
	var out eventtest.Collector
	tr := newFileTranslator(&out)
	for _, e := range []*etwevent.Event{
		imageEvent(3, 2, 0, 0xFFFFF80000000000, 0x100000, `\SystemRoot\system32\ntoskrnl.exe`),
		procEvent(3, 3, 100, 4, "app.exe", `"C:\app.exe" -x`),
		threadEvent(3, 3, 100, 101),
		threadEvent(3, 3, 100, 102),
		procEvent(3, 4, 200, 4, "other.exe", ""),
		threadEvent(3, 4, 200, 201),
		sampleEvent(10, 101, uAddr),
		sampleEvent(11, 201, uAddr),
		procEvent(1, 20, 300, 100, "child.exe", "child.exe"),
		threadEvent(1, 21, 300, 301),
		sampleEvent(30, 301, uAddr+8),
		threadEvent(2, 39, 300, 301),
		endEvent(40, 300, 7),
		sampleEvent(41, 301, kAddr), // the exit path, after Process End
	} {
		tr.Event(e, 0)
	}
	tr.Flush()
	var got []string
	for _, s := range out.Samples {
		got = append(got, fmt.Sprintf("%d/%d", s.Pid, s.Tid))
	}
	if want := []string{"100/101", "200/201", "300/301", "300/301"}; !reflect.DeepEqual(got, want) {
		t.Errorf("samples of %v, want %v", got, want)
	}
	got = nil
	for _, c := range out.Comms {
		got = append(got, fmt.Sprintf("%d/%d@%d %v", c.Pid, c.Tid, c.Time, c.Argv))
	}
	// The rundown's threads at the trace's start (raw 1, 100 ns); the
	// child's at its start event.
	if want := []string{"100/101@100 [app.exe -x]", "100/102@100 [app.exe -x]", "200/201@100 [other.exe]", "300/301@2100 [child.exe]"}; !reflect.DeepEqual(got, want) {
		t.Errorf("comms %v, want %v", got, want)
	}
	if len(out.Forks) != 0 {
		t.Errorf("forks %+v: every process is recorded from its own events", out.Forks)
	}
	got = nil
	for _, m := range out.Maps {
		got = append(got, fmt.Sprintf("%d@%d", m.Pid, m.Time))
	}
	if want := []string{"100@100", "200@100", "300@2000"}; !reflect.DeepEqual(got, want) {
		t.Errorf("kernel maps %v, want one per process", got)
	}
	want := []event.Exit{{Time: 3900, Pid: 300, Tid: 301}, {Time: 4100, Pid: 300, Tid: 300, ExitCode: 7, ExitKnown: true}}
	if !reflect.DeepEqual(out.Exits, want) {
		t.Errorf("exits %+v, want %+v", out.Exits, want)
	}
}

// TestETWRulesEndRundownOnly: in a circular trace the start rundown is
// overwritten, and the rundown at the end names the threads (before their
// process) after their samples: the samples are kept, the threads are
// there since the start, and the process is named.
func TestETWRulesEndRundownOnly(t *testing.T) {
	var out eventtest.Collector
	tr := newFileTranslator(&out)
	for _, e := range []*etwevent.Event{
		sampleEvent(10, 101, uAddr),
		sampleEvent(11, 102, uAddr),
		threadEvent(4, 50, 100, 101),
		threadEvent(4, 50, 100, 102),
		procEvent(4, 50, 100, 4, "app.exe", ""),
	} {
		tr.Event(e, 0)
	}
	tr.Flush()
	if len(out.Samples) != 2 || out.Samples[0].Pid != 100 || out.Samples[1].Tid != 102 {
		t.Errorf("samples %+v", out.Samples)
	}
	var got []string
	for _, c := range out.Comms {
		got = append(got, fmt.Sprintf("%d/%d@%d %v", c.Pid, c.Tid, c.Time, c.Argv))
	}
	if want := []string{"100/101@100 []", "100/102@100 []", "100/101@100 [app.exe]"}; !reflect.DeepEqual(got, want) {
		t.Errorf("comms %v, want %v", got, want)
	}
}

// TestETWRulesKernelFrames: a sample in the kernel without a kernel part
// has its instruction as one; a stack that calls back from the kernel
// into user mode has kernel frames in its middle, marked by KernelFrom,
// or dropped without --kernel.
func TestETWRulesKernelFrames(t *testing.T) {
	for _, kernel := range []bool{true, false} {
		var out eventtest.Collector
		tr := newRuleTranslator(&out, kernel, 100)
		for _, e := range []*etwevent.Event{
			procEvent(3, 1, 100, 4, "app.exe", ""),
			threadEvent(3, 1, 100, 101),
			threadEvent(3, 1, 100, 102),
			sampleEvent(10, 101, kAddr),
			sampleEvent(11, 102, uAddr),
			stackEvent(11, 11, 100, 102, uAddr, kAddr+8, uAddr+0x10),
		} {
			tr.Event(e, 0)
		}
		tr.Flush()
		if len(out.Samples) != 2 {
			t.Fatalf("%d samples", len(out.Samples))
		}
		a, b := out.Samples[0], out.Samples[1]
		if kernel {
			if !reflect.DeepEqual(a.Stack, []uint64{kAddr}) || a.KernelFrames != 1 || !a.InKernel {
				t.Errorf("kernel: sample in the kernel %+v", a)
			}
			if !reflect.DeepEqual(b.Stack, []uint64{uAddr, kAddr + 8, uAddr + 0x10}) || b.KernelFrames != 0 || b.KernelFrom != 0xFFFF800000000000 {
				t.Errorf("kernel: callback stack %+v", b)
			}
		} else {
			if a.Stack != nil || !a.InKernel {
				t.Errorf("no kernel: sample in the kernel %+v, want no frames, in the kernel", a)
			}
			if !reflect.DeepEqual(b.Stack, []uint64{uAddr, uAddr + 0x10}) || b.KernelFrom != 0 {
				t.Errorf("no kernel: callback stack %+v", b)
			}
		}
	}
}

// TestETWRulesImages: an unload is an Unmap; the rundown at the end adds
// only the images not seen (a circular trace's); a new process with a
// reused pid ends the old one first and gets the kernel's images again.
func TestETWRulesImages(t *testing.T) {
	var out eventtest.Collector
	tr := newFileTranslator(&out)
	for _, e := range []*etwevent.Event{
		imageEvent(3, 2, 0, 0xFFFFF80000000000, 0x100000, `\SystemRoot\system32\ntoskrnl.exe`),
		procEvent(3, 3, 100, 4, "app.exe", ""),
		threadEvent(3, 3, 100, 101),
		imageEvent(10, 5, 100, 0x10000000, 0x10000, `C:\a.dll`),
		imageEvent(2, 6, 100, 0x10000000, 0x10000, `C:\a.dll`),
		imageEvent(10, 7, 100, 0x20000000, 0x10000, `C:\b.dll`),
		endEvent(8, 100, 0),
		procEvent(1, 9, 100, 4, "again.exe", ""),
		threadEvent(1, 9, 100, 103),
		imageEvent(4, 50, 100, 0x20000000, 0x10000, `C:\b.dll`),
		imageEvent(4, 50, 100, 0x30000000, 0x10000, `C:\c.dll`),
	} {
		tr.Event(e, 0)
	}
	tr.Flush()
	var got []string
	for _, m := range out.Maps {
		got = append(got, fmt.Sprintf("%s@%d", m.Path, m.Time))
	}
	// b.dll's load was the first process's: the second's is the rundown's.
	want := []string{`C:\Windows\system32\ntoskrnl.exe@100`, `C:\a.dll@500`, `C:\b.dll@700`,
		`C:\Windows\system32\ntoskrnl.exe@900`, `C:\b.dll@100`, `C:\c.dll@100`}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("maps %v, want %v", got, want)
	}
	if len(out.Unmaps) != 1 || out.Unmaps[0] != (event.Unmap{Time: 600, Pid: 100, Start: 0x10000000, End: 0x10010000}) {
		t.Errorf("unmaps %+v", out.Unmaps)
	}
	if len(out.Exits) != 1 || out.Exits[0].Time != 800 {
		t.Errorf("exits %+v, want the first process's, at its end", out.Exits)
	}
}

// An image's identity from the PE on disk, when the file is the one that
// was loaded: its PDB's, and the machine it was built for.
func TestDiskIdentity(t *testing.T) {
	path := "../testdata/hello-mingw.exe"
	f, err := objfile.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	tds, size, ok := f.PEHeader()
	f.Close()
	if !ok {
		t.Fatal("no PE header")
	}
	id := DiskIdentity(path, uint64(size), tds)
	// x86_64-w64-mingw32-objdump -p: "(format RSDS signature
	// ed9d3dd756f35375d8af177bd0351b0a age 1 pdb (none))", SizeOfImage
	// d000. With no PDB path the image goes by its own name.
	if id == nil || id.BreakpadID != "ED9D3DD756F35375D8AF177BD0351B0A1" || id.CodeID != fmt.Sprintf("%08Xd000", tds) ||
		id.Arch != "x86_64" || id.DebugName != "hello-mingw.exe" || id.Format != objfile.PE {
		t.Fatalf("identity %+v", id)
	}
	if id := DiskIdentity(path, uint64(size)+0x1000, 0); id != nil {
		t.Errorf("identity %+v taken from a file of another size", id)
	}
	if id := DiskIdentity(path, uint64(size), tds+1); id != nil {
		t.Errorf("identity %+v taken from a file of another TimeDateStamp", id)
	}
	if id := DiskIdentity("../testdata/README.md", uint64(size), 0); id != nil {
		t.Errorf("identity %+v of a file that is not a PE", id)
	}
}
