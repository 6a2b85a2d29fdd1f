package mach

import (
	"encoding/binary"
	"encoding/hex"
	"slices"
	"strings"
	"testing"

	"github.com/gprof-dev/gprof/attach/internal/suspendwalk"
	"github.com/gprof-dev/gprof/event"
	"github.com/gprof-dev/gprof/objfile"
)

// machoTypeExecute is MH_EXECUTE, a program's file type.
const machoTypeExecute = 2

// The identity of a real Mach-O image, decoded from the bytes a target's
// memory holds at its load address (the header and load commands), agrees
// with std debug/macho reading the whole file (through objfile).
func TestMachoFromMemoryRealBinaries(t *testing.T) {
	for _, arch := range []string{"arm64", "amd64"} {
		t.Run(arch, func(t *testing.T) {
			file := darwinGo(t, arch, "identity")
			want := machoOracle(t, file)
			// Only the header and load commands are in memory at the load
			// address for the decoder to see; give it exactly that.
			head := file[:objfile.MachHeaderSize64]
			n, err := objfile.MachOSizeOfCmds(head)
			if err != nil || n != want.sizeofcmds {
				t.Fatalf("objfile.MachOSizeOfCmds = %d, %v; want %d", n, err, want.sizeofcmds)
			}
			img, err := objfile.MachOFromMemory(slices.Clone(file[:n]))
			if err != nil {
				t.Fatal(err)
			}
			if img.UUID != want.uuid || img.TextAddr != want.textAddr || img.TextSize != want.textSize {
				t.Errorf("image %x text %#x+%#x, want %x text %#x+%#x", img.UUID, img.TextAddr, img.TextSize, want.uuid, want.textAddr, want.textSize)
			}
			wantArch := map[string]string{"arm64": "arm64", "amd64": "x86_64"}[arch]
			if img.Arch != wantArch || img.Arch != want.arch || img.Type != machoTypeExecute {
				t.Errorf("arch %q type %v, want %q exec", img.Arch, img.Type, wantArch)
			}
			// The breakpad ID is the UUID's bytes in order, uppercase, "0".
			id := strings.ToUpper(hex.EncodeToString(want.uuid[:])) + "0"
			if img.BreakpadID() != id || len(id) != 33 || img.CodeID() != id[:32] {
				t.Errorf("breakpad ID %s code ID %s, want %s", img.BreakpadID(), img.CodeID(), id)
			}
			// A header cut short is an error, not a wrong identity.
			if _, err := objfile.MachOFromMemory(file[:n-8]); err == nil {
				t.Error("a truncated header decoded")
			}
		})
	}
	t.Run("object", func(t *testing.T) {
		// A relocatable object has no __TEXT segment and no UUID: it is
		// never a loaded image, and must not pass for one.
		obj := clangObject(t, "arm64-apple-macos11", "int f(int x) { return x + 1; }\n")
		n, err := objfile.MachOSizeOfCmds(obj)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := objfile.MachOFromMemory(obj[:n]); err == nil {
			t.Error("an object file decoded as an image")
		}
	})
	t.Run("not macho", func(t *testing.T) {
		if _, err := objfile.MachOSizeOfCmds(make([]byte, 64)); err == nil {
			t.Error("zeros accepted as a Mach-O header")
		}
	})
}

// The arch names come from the header's CPU type and subtype, arm64e
// included, as clang writes them for each Apple target.
func TestMachoArchFromClangObjects(t *testing.T) {
	for target, want := range map[string]string{
		"arm64-apple-macos11":  "arm64",
		"arm64e-apple-macos11": "arm64e",
		"x86_64-apple-macos11": "x86_64",
	} {
		obj := clangObject(t, target, "int f(int x) { return x + 1; }\n")
		f, err := objfile.NewFile(bytesReader(obj), target)
		if err != nil {
			t.Fatal(err)
		}
		if got := f.Identity().Arch; got != want {
			t.Errorf("%s: arch %q, want %q", target, got, want)
		}
	}
}

// Thread states are decoded at the offsets of Apple's structs, and arm64
// pointer-authentication bits are stripped.
func TestDecodeThreadState(t *testing.T) {
	t.Run("arm64", func(t *testing.T) {
		b := make([]byte, armThreadState64Count*4)
		for i := 0; i < 29; i++ { // x0..x28: noise
			binary.LittleEndian.PutUint64(b[i*8:], 0xdead0000+uint64(i))
		}
		const pac = 0x002d_8000_0000_0000
		binary.LittleEndian.PutUint64(b[29*8:], 0x16fdff000)     // fp
		binary.LittleEndian.PutUint64(b[30*8:], pac|0x100003f20) // lr, signed
		binary.LittleEndian.PutUint64(b[31*8:], 0x16fdfefe0)     // sp
		binary.LittleEndian.PutUint64(b[32*8:], 0x100003f58)     // pc
		binary.LittleEndian.PutUint32(b[33*8:], 0x60000000)      // cpsr
		r, err := decodeThreadState(suspendwalk.ARM64, b)
		if err != nil {
			t.Fatal(err)
		}
		want := event.Regs{IP: 0x100003f58, SP: 0x16fdfefe0, FP: 0x16fdff000, LR: 0x100003f20}
		if r != want {
			t.Errorf("regs %+x, want %+x", r, want)
		}
		if _, err := decodeThreadState(suspendwalk.ARM64, b[:len(b)-1]); err == nil {
			t.Error("short arm64 state decoded")
		}
	})
	t.Run("x86_64", func(t *testing.T) {
		b := make([]byte, x86ThreadState64Count*4)
		names := []string{"rax", "rbx", "rcx", "rdx", "rdi", "rsi", "rbp", "rsp", "r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15", "rip", "rflags", "cs", "fs", "gs"}
		vals := map[string]uint64{"rbx": 0x7ff7bfeff7c8, "rbp": 0x7ff7bfeff6b0, "rsp": 0x7ff7bfeff690, "rip": 0x100003f40}
		for i, n := range names {
			v, ok := vals[n]
			if !ok {
				v = 0xdead0000 + uint64(i)
			}
			binary.LittleEndian.PutUint64(b[i*8:], v)
		}
		r, err := decodeThreadState(suspendwalk.AMD64, b)
		if err != nil {
			t.Fatal(err)
		}
		if want := (event.Regs{IP: vals["rip"], SP: vals["rsp"], FP: vals["rbp"], BX: vals["rbx"]}); r != want {
			t.Errorf("regs %+x, want %+x", r, want)
		}
	})
	if f, c := stateFlavor(suspendwalk.ARM64); f != 6 || c != 68 {
		t.Errorf("ARM_THREAD_STATE64 %d/%d", f, c)
	}
	if f, c := stateFlavor(suspendwalk.AMD64); f != 4 || c != 42 {
		t.Errorf("x86_THREAD_STATE64 %d/%d", f, c)
	}
}

func TestDecodeThreadInfo(t *testing.T) {
	b := make([]byte, threadBasicInfoCount*4)
	put := func(i int, v int32) { binary.LittleEndian.PutUint32(b[i*4:], uint32(v)) }
	put(0, 2)      // user seconds
	put(1, 500000) // user µs
	put(2, 1)      // system seconds
	put(3, 250)    // system µs
	put(6, thRunRunning)
	put(7, 0)
	put(8, 1) // suspend count
	bi, err := decodeThreadBasicInfo(b)
	if err != nil {
		t.Fatal(err)
	}
	if want := (threadBasic{CPU: 3_500_250_000, Running: true, SuspendCount: 1}); bi != want {
		t.Errorf("basic info %+v, want %+v", bi, want)
	}
	put(6, 3) // TH_STATE_WAITING
	put(7, thFlagsIdle)
	if bi, _ := decodeThreadBasicInfo(b); bi.Running || !bi.Idle {
		t.Errorf("waiting idle thread decoded as %+v", bi)
	}

	ext := make([]byte, threadExtendedInfoCount*4)
	copy(ext[48:], "com.apple.main-thread\x00garbage")
	if name, err := decodeThreadName(ext); err != nil || name != "com.apple.main-thread" {
		t.Errorf("name %q, %v", name, err)
	}
	id := make([]byte, threadIdentifierInfoCount*4)
	binary.LittleEndian.PutUint64(id, 0x1a2b3c)
	if v, err := decodeThreadID(id); err != nil || v != 0x1a2b3c {
		t.Errorf("thread id %#x, %v", v, err)
	}
	dy := make([]byte, taskDyldInfoCount*4)
	binary.LittleEndian.PutUint64(dy, 0x1f8a3c060)
	binary.LittleEndian.PutUint64(dy[8:], 0x170)
	binary.LittleEndian.PutUint32(dy[16:], 1)
	if a, s, f, err := decodeTaskDyldInfo(dy); err != nil || a != 0x1f8a3c060 || s != 0x170 || f != 1 {
		t.Errorf("task_dyld_info %#x %#x %d %v", a, s, f, err)
	}
}

// prologue returns the first bytes of the C function named sym (without
// the underscore Apple's ABI prefixes to it) in a clang object's __text.
func prologue(t *testing.T, obj []byte, sym string) []byte {
	t.Helper()
	f, err := objfile.NewFile(bytesReader(obj), "object")
	if err != nil {
		t.Fatal(err)
	}
	text := f.Section("__text")
	data, err := text.Data()
	if err != nil {
		t.Fatal(err)
	}
	syms, err := f.SymbolTable()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range syms {
		if s.Name == sym {
			off := s.Addr - text.Addr
			return data[off : off+8]
		}
	}
	t.Fatalf("no %s in the object", sym)
	return nil
}

const fpSource = `
__attribute__((noinline)) int leaf(int x) { return x * 3; }
__attribute__((noinline)) int mid(int x) { return leaf(x) + 1; }
int top(int x) { return mid(x) + 2; }
`

// The frame-pointer walk follows frame records laid out as Apple's
// compilers lay them out. The layout is read off real clang output first:
// on arm64 the prologue stores x29 then x30 (the return address) as a
// pair at the frame pointer; on x86_64 it pushes rbp right under the
// return address the call pushed.
func TestWalkFPRealFrameLayout(t *testing.T) {
	arm := prologue(t, clangObject(t, "arm64-apple-macos11", fpSource), "mid")
	ins := binary.LittleEndian.Uint32(arm)
	if op := ins >> 22; (op != 0x2a6 && op != 0x2a4) || ins&31 != 29 || (ins>>10)&31 != 30 {
		t.Fatalf("arm64 prologue %08x is not stp x29, x30, [sp...]", ins)
	}
	x86 := prologue(t, clangObject(t, "x86_64-apple-macos11", fpSource), "mid")
	if !strings.HasPrefix(string(x86), "\x55\x48\x89\xe5") {
		t.Fatalf("x86_64 prologue % x is not push rbp; mov rbp, rsp", x86[:4])
	}

	const base = 0x16fdf0000
	const leafPC, inMid, inTop, inMain = 0x100003f04, 0x100003f2c, 0x100003f50, 0x100003f88
	for _, a := range []suspendwalk.Arch{suspendwalk.ARM64, suspendwalk.AMD64} {
		t.Run(a.String(), func(t *testing.T) {
			// leaf made no frame record: fp is mid's. Records: mid's at
			// +0x20 (caller's fp, return into top), top's at +0x40
			// (return into main), main's at +0x60 ending the chain.
			stack := make([]byte, 0x80)
			rec := func(at, next, ret uint64) {
				binary.LittleEndian.PutUint64(stack[at:], next)
				binary.LittleEndian.PutUint64(stack[at+8:], ret)
			}
			ret := uint64(inMid)
			if a == suspendwalk.ARM64 {
				ret |= 0x0029_8000_0000_0000 // a signed return address (arm64e)
			}
			rec(0x20, base+0x40, inTop)
			rec(0x40, base+0x60, inMain)
			rec(0x60, 0, 0)
			regs := event.Regs{IP: leafPC, SP: base, FP: base + 0x20, LR: ret}
			got := suspendwalk.WalkFP(a, regs, stack, base, nil, 64)
			if want := []uint64{leafPC, inTop, inMain}; !slices.Equal(got, want) {
				t.Errorf("frames %x, want %x", got, want)
			}
			if a == suspendwalk.ARM64 {
				rec(0x20, base+0x40, 0x0029_8000_0000_0000|inTop)
				if got := suspendwalk.WalkFP(a, regs, stack, base, nil, 64); len(got) < 2 || got[1] != inTop {
					t.Errorf("signed return address not stripped: %x", got)
				}
			}
			// A chain that loops, or points down the stack, ends.
			rec(0x40, base+0x20, inMain)
			if got := suspendwalk.WalkFP(a, regs, stack, base, nil, 64); len(got) != 3 {
				t.Errorf("looping chain gave %x", got)
			}
			// A frame pointer outside the copy gives the leaf alone.
			regs.FP = base + 0x1000
			if got := suspendwalk.WalkFP(a, regs, stack, base, nil, 64); !slices.Equal(got, []uint64{leafPC}) {
				t.Errorf("frame pointer outside the copy gave %x", got)
			}
			// The depth limit holds.
			regs.FP = base + 0x20
			rec(0x40, base+0x60, inMain)
			if got := suspendwalk.WalkFP(a, regs, stack, base, nil, 2); len(got) != 2 {
				t.Errorf("maxFrames 2 gave %d frames", len(got))
			}
		})
	}
}

func TestAttachAdvice(t *testing.T) {
	for _, c := range []struct {
		f    attachFacts
		want string
	}{
		{attachFacts{pid: 1, path: "/usr/bin/yes", root: true}, "System Integrity Protection"},
		{attachFacts{pid: 1, path: "/Applications/X.app/Contents/MacOS/X", csOK: true, csFlags: csPlatformBinary}, "System Integrity Protection"},
		{attachFacts{pid: 1, path: "/Applications/X.app/Contents/MacOS/X", csOK: true, csFlags: csRuntime}, "hardened runtime without the get-task-allow"},
		{attachFacts{pid: 1, path: "/Users/me/a.out", csOK: true, csFlags: csRuntime | csGetTaskAllow}, "gprof setup"},
		{attachFacts{pid: 1, path: "/usr/local/bin/mine"}, "gprof setup"},
		{attachFacts{pid: 1, path: "/Users/me/a.out", hasEnt: true, kr: "kr"}, "run gprof as root"},
		{attachFacts{pid: 1, path: "/Users/me/a.out", root: true, kr: "kr"}, "even as root"},
	} {
		if got := attachAdvice(c.f); !strings.Contains(got, c.want) {
			t.Errorf("%+v: %q, want it to say %q", c.f, got, c.want)
		}
	}
}
