package record

import (
	"testing"

	"github.com/gprof-dev/gprof/event"
	"github.com/gprof-dev/gprof/objfile"
)

// An unmapped image stays a library of the process, since samples taken
// before the unmap still need it, but the unwinder's view of the address
// space loses it, and a later image mapped at the same range replaces it.
func TestBuilderUnmap(t *testing.T) {
	b := newTestBuilder()
	b.handle(mapEv(1001*ms, 10, 0x1000, 0x2000, "/lib/a.so"))
	b.handle(sample(1002*ms, 10, 10, 0x1010))
	b.handle(&event.Unmap{Time: 1003 * ms, Pid: 10, Start: 0x1000, End: 0x2000})
	pr := b.procs[10]
	var sp space
	syncSpace(&sp, pr)
	if m, ok := sp.as.Lookup(0x1010); ok {
		t.Errorf("after unmap the unwinder still sees %+v at 0x1010", m)
	}
	// The sample before the unmap still needs a.so; the unmap itself is
	// no library.
	libs := newLibResolver(nil).libsFor(pr)
	if len(libs) != 1 || libs[0].Path != "/lib/a.so" || libs[0].Start != 0x1000 || libs[0].End != 0x2000 {
		t.Errorf("libs %+v; want /lib/a.so alone", libs)
	}
	b.handle(mapEv(1004*ms, 10, 0x1000, 0x2000, "/lib/b.so"))
	sp = space{}
	syncSpace(&sp, pr)
	if m, ok := sp.as.Lookup(0x1010); !ok || m.Path != "/lib/b.so" {
		t.Errorf("after a new map the unwinder sees %+v, %v; want /lib/b.so", m, ok)
	}
}

// An image with no file on disk (macOS's dyld shared cache) is a library
// with the identity its backend gave, placed by its load address.
func TestBuilderImageWithoutFile(t *testing.T) {
	b := newTestBuilder()
	m := mapEv(1001*ms, 10, 0x7ff800001000, 0x7ff800009000, "/usr/lib/system/libsystem_kernel.dylib")
	m.Image = &objfile.Identity{
		DebugName:  "libsystem_kernel.dylib",
		BreakpadID: "6B7F1AD0C3A83F07B3A2E2B1A34C8D1E0",
		CodeID:     "6B7F1AD0C3A83F07B3A2E2B1A34C8D1E",
		Arch:       "arm64",
	}
	m.ImageBase = 0x7ff800000000
	b.handle(m)
	r := newLibResolver(nil)
	r.observe(10, &b.procs[10].mappings[0].Map)
	libs := r.libsFor(b.procs[10])
	if len(libs) != 1 {
		t.Fatalf("libs %+v; want one", libs)
	}
	l := libs[0]
	if l.DebugName != "libsystem_kernel.dylib" || l.BreakpadID != m.Image.BreakpadID || l.CodeID != m.Image.CodeID ||
		l.Arch != "arm64" || l.Name != "libsystem_kernel.dylib" || l.Path != m.Path {
		t.Errorf("lib %+v; want the backend's identity", l)
	}
	if got, want := l.Start-l.Offset, uint64(0x7ff800000000); got != want {
		t.Errorf("relative 0 at %#x; want the image's base %#x", got, want)
	}
}

// A new thread and a new process are told apart by Fork.NewThread.
func TestForkNewThread(t *testing.T) {
	if !(&event.Fork{Pid: 10, Tid: 11, Ppid: 10, Ptid: 10}).NewThread() {
		t.Error("a clone within process 10 is not a new thread")
	}
	if (&event.Fork{Pid: 12, Tid: 12, Ppid: 10, Ptid: 10}).NewThread() {
		t.Error("a fork of process 10 is a new thread")
	}
}

// syncSpace brings sp up to date with pr as userUnwinder.sync does.
func syncSpace(sp *space, pr *proc) { sp.gen = pr.mapGen; sp.catchUp(pr) }

// An image unloaded before any sample of its process landed (Windows maps
// a DLL as data to read its resources, then unloads it) is no library:
// it would only hide the image loaded at its range later.
func TestBuilderUnmapBeforeSamples(t *testing.T) {
	b := newTestBuilder()
	b.handle(mapEv(1001*ms, 10, 0x1000, 0x3000, "/lib/data.so"))
	b.handle(&event.Unmap{Time: 1002 * ms, Pid: 10, Start: 0x1000, End: 0x3000})
	b.handle(mapEv(1003*ms, 10, 0x1000, 0x2000, "/lib/code.so"))
	b.handle(sample(1004*ms, 10, 10, 0x1010))
	libs := newLibResolver(nil).libsFor(b.procs[10])
	if len(libs) != 1 || libs[0].Path != "/lib/code.so" {
		t.Errorf("libs %+v; want /lib/code.so alone", libs)
	}
}

// A Windows image a trace identified, replayed on another OS: named by
// its file name, its PDB as debug file, and no architecture rather than
// this host's; one the trace did not identify has its own path as debug
// file and the identity that stands for none.
func TestBuilderWindowsImage(t *testing.T) {
	b := newTestBuilder()
	m := mapEv(1001*ms, 10, 0x7ff800000000, 0x7ff8001be000, `C:\Windows\System32\ntdll.dll`)
	m.Image = &objfile.Identity{DebugName: "ntdll.pdb", DebugPath: `ntdll.pdb`, BreakpadID: "6048FDB62DCD41C18835594844CE71432",
		CodeID: "5010ACD21be000"}
	m.ImageBase = 0x7ff800000000
	b.handle(m)
	m2 := mapEv(1001*ms, 10, 0x10000000, 0x10010000, `C:\app\plugin.dll`)
	m2.Image, m2.ImageBase = &objfile.Identity{CodeID: "5010ACD210000"}, 0x10000000
	b.handle(m2)
	r := newLibResolver(nil)
	libs := r.libsFor(b.procs[10])
	if len(libs) != 2 {
		t.Fatalf("libs %+v", libs)
	}
	if l := libs[1]; l.Name != "ntdll.dll" || l.DebugName != "ntdll.pdb" || l.DebugPath != "ntdll.pdb" || l.Arch != "" || l.Offset != 0 {
		t.Errorf("ntdll %+v", l)
	}
	if l := libs[0]; l.Name != "plugin.dll" || l.DebugName != "plugin.dll" || l.DebugPath != `C:\app\plugin.dll` || l.BreakpadID != zeroBreakpadID || l.CodeID != "5010ACD210000" {
		t.Errorf("plugin.dll %+v", l)
	}
}
