package symbolize

import (
	"errors"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/gprof-dev/gprof/objfile"
	"github.com/gprof-dev/gprof/profile"
)

// mapLibs lays bin out as the kernel would at bias: one Lib per PT_LOAD,
// page-aligned, with offsets from LibOffset.
func mapLibs(t *testing.T, bin, path string, bias uint64) []profile.Lib {
	b, err := Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	id := b.Identity()
	var libs []profile.Lib
	place := b.obj.Placement()
	for _, p := range place.Segments() {
		const page = 4096
		start := bias + p.Addr&^(page-1)
		end := bias + (p.Addr+p.Size+page-1)&^(page-1)
		libs = append(libs, profile.Lib{
			Start: start, End: end, Offset: place.LibOffset(start, p.Offset&^(page-1)),
			Name: "prog", Path: path, DebugName: "prog", DebugPath: path,
			BreakpadID: id.BreakpadID, CodeID: id.CodeID, Arch: id.Arch,
		})
	}
	return libs
}

// callReturn finds the return address of the first call from caller to
// callee in objdump's disassembly.
func callReturn(t *testing.T, bin, caller, callee string) uint64 {
	out := run(t, "objdump", "-d", "--no-show-raw-insn", bin)
	_, body, ok := strings.Cut(out, "<"+caller+">:\n")
	if !ok {
		t.Fatalf("objdump shows no %s", caller)
	}
	re := regexp.MustCompile(`(?m)^\s*[0-9a-f]+:\s+call\s+[0-9a-f]+ <` + callee + `>\n\s*([0-9a-f]+):`)
	m := re.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no call from %s to %s", caller, callee)
	}
	a, _ := strconv.ParseUint(m[1], 16, 64)
	return a
}

func TestProfile(t *testing.T) {
	bin := build(t, "prog-gdwarf-5", "gcc", "-gdwarf-5", "-O2", "-o", "OUT", "TESTDATA/prog.c")
	const bias = 0x555555554000
	b, err := Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()

	workLo, _ := funcRange(t, bin, "work")
	ret := callReturn(t, bin, "helper", "work")
	leaf := workLo + 8
	const kaddr, jit, stray = 0xffffffff81000123, 0x7f0000001010, 0x10

	// Recorded under a path that no longer exists; the caller hands over
	// the file it opened, as a recorder does with the binaries it opened
	// while their processes lived.
	gone := "/nonexistent/prog"
	proc := &profile.Process{Pid: 4242, Libs: mapLibs(t, bin, gone, bias)}
	th := &profile.Thread{Tid: 4242}
	kf := profile.Frame{Address: kaddr, Category: profile.CategoryKernel}
	uf := func(a uint64) profile.Frame { return profile.Frame{Address: a, Category: profile.CategoryUser} }
	th.Samples.Add(th.InternStack([]profile.Frame{uf(bias + leaf), uf(bias + ret)}), 1, -1)
	th.Samples.Add(th.InternStack([]profile.Frame{kf, uf(bias + workLo), uf(bias + ret)}), 2, -1)
	th.Samples.Add(th.InternStack([]profile.Frame{uf(jit), uf(stray), {Label: "pre-symbolicated"}}), 3, -1)
	proc.Threads = append(proc.Threads, th)
	p := &profile.Profile{Processes: []*profile.Process{proc}}

	k, err := ParseKallsyms(strings.NewReader(kallsymsSample))
	if err != nil {
		t.Fatal(err)
	}
	pm, err := ParsePerfMap(strings.NewReader(perfMapSample))
	if err != nil {
		t.Fatal(err)
	}
	key := proc.Libs[0].Key()
	given, err := objfile.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer given.Close()
	st, err := Profile(p, Options{
		DebugRoot: t.TempDir(),
		Binaries:  map[profile.LibKey]*objfile.File{key: given},
		Kallsyms:  func() (*Kallsyms, error) { return k, nil },
		PerfMaps:  map[int]*PerfMap{4242: pm},
	})
	if err != nil {
		t.Fatal(err)
	}
	check := func(k profile.LibKey, rel uint64, want []profile.SymbolFrame) {
		t.Helper()
		if got := p.Symbols.Lookup(k, rel); !reflect.DeepEqual(got, want) {
			t.Errorf("Symbols[%s][%#x] = %+v, want %+v", k.DebugName, rel, got, want)
		}
	}
	base := b.Identity().Base
	check(key, leaf-base, b.Lookup(leaf-base))
	// Only ever a return address: looked up inside the call, and filed
	// there.
	check(key, ret-base-1, b.Lookup(ret-base-1))
	// The user frame under a kernel frame is where the thread trapped.
	check(key, workLo-base, b.Lookup(workLo-base))
	check(profile.KernelKey, kaddr, []profile.SymbolFrame{{Function: "entry_a", FuncAddr: 0xffffffff81000010, FuncSize: 0x1f0}})
	check(profile.PerfMapKey(4242), jit, []profile.SymbolFrame{{Function: "LazyCompile:~foo file.js:1", FuncAddr: 0x7f0000001000, FuncSize: 0x40}})
	if got := p.Symbols.LookupFrame(key, ret-base, true); len(got) == 0 || got[0].Function != "helper" {
		t.Errorf("return address in helper symbolized as %+v", got)
	}
	if st.Resolved != 5 || st.Unresolved != 1 || len(st.Libs) != 3 {
		t.Errorf("stats = %+v", st)
	}
	for _, l := range st.Libs {
		if l.Key == key && l.Path != bin {
			t.Errorf("%s symbolized from %q, want the file handed over, %s", key.DebugName, l.Path, bin)
		}
	}
	// The file handed over is still the caller's, open.
	if _, err := given.Symbols(); err != nil {
		t.Errorf("the caller's file after Profile: %v", err)
	}

	// A second pass has nothing left to do: only the stray address,
	// outside every lib, is looked for again; the binary is not.
	st, _ = Profile(p, Options{PerfMaps: map[int]*PerfMap{4242: pm}})
	if st.Resolved != 0 || st.Unresolved != 1 || len(st.Libs) != 1 || st.Libs[0].Key != profile.PerfMapKey(4242) {
		t.Errorf("second pass: stats %+v", st)
	}
}

// A file handed over that is not the build a lib names is not used: its
// names would be another build's.
func TestProfileGivenOtherBuild(t *testing.T) {
	bin := build(t, "prog-gdwarf-5", "gcc", "-gdwarf-5", "-O2", "-o", "OUT", "TESTDATA/prog.c")
	other := build(t, "prog-gdwarf-4", "gcc", "-gdwarf-4", "-O2", "-o", "OUT", "TESTDATA/prog.c")
	proc := &profile.Process{Pid: 1, Libs: mapLibs(t, bin, "/nonexistent/prog", 0x1000000)}
	th := &profile.Thread{Tid: 1}
	th.Samples.Add(th.InternStack([]profile.Frame{{Address: proc.Libs[1].Start + 4}}), 0, -1)
	proc.Threads = []*profile.Thread{th}
	f, err := objfile.Open(other)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, err := Profile(&profile.Profile{Processes: []*profile.Process{proc}},
		Options{Binaries: map[profile.LibKey]*objfile.File{proc.Libs[0].Key(): f}})
	if err != nil {
		t.Fatal(err)
	}
	if st.Resolved != 0 || st.Unresolved != 1 || len(st.Libs) != 1 || st.Libs[0].Err == nil {
		t.Errorf("stats = %+v", st)
	}
}

func TestProfileRefusesOtherBuild(t *testing.T) {
	bin := build(t, "prog-gdwarf-5", "gcc", "-gdwarf-5", "-O2", "-o", "OUT", "TESTDATA/prog.c")
	other := build(t, "prog-gdwarf-4", "gcc", "-gdwarf-4", "-O2", "-o", "OUT", "TESTDATA/prog.c")
	proc := &profile.Process{Pid: 1, Libs: mapLibs(t, bin, other, 0x1000000)}
	th := &profile.Thread{Tid: 1}
	th.Samples.Add(th.InternStack([]profile.Frame{{Address: proc.Libs[1].Start + 4}}), 0, -1)
	proc.Threads = []*profile.Thread{th}
	st, err := Profile(&profile.Profile{Processes: []*profile.Process{proc}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if st.Resolved != 0 || st.Unresolved != 1 || len(st.Libs) != 1 || st.Libs[0].Err == nil {
		t.Errorf("stats = %+v", st)
	}
}

func TestProfileKernelUnavailable(t *testing.T) {
	proc := &profile.Process{Pid: 1}
	th := &profile.Thread{Tid: 1}
	th.Samples.Add(th.InternStack([]profile.Frame{{Address: 0xffffffff81000000, Category: profile.CategoryKernel}}), 0, -1)
	proc.Threads = []*profile.Thread{th}
	zeroed := regexp.MustCompile(`(?m)^[0-9a-f]+`).ReplaceAllString(kallsymsSample, "0000000000000000")
	st, err := Profile(&profile.Profile{Processes: []*profile.Process{proc}}, Options{
		Kallsyms: func() (*Kallsyms, error) { return ParseKallsyms(strings.NewReader(zeroed)) },
	})
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(st.Libs[0].Err, ErrKallsymsUnavailable) {
		t.Errorf("kernel error = %v", st.Libs[0].Err)
	}
	if st.Unresolved != 1 || st.Libs[0].Key != profile.KernelKey {
		t.Errorf("stats = %+v", st)
	}
}

// TestProfileCallSite: a caller is looked up inside its call instruction,
// not at its return address, even where the same address is also sampled
// as a leaf (skid lands samples just after calls). In goprog, caller's
// return address from heavy is the first instruction of the inlined mix:
// looked up there, caller's frame would show a main.mix that never called
// heavy (issue 18: ssa.Compile;time.Now;ssa.regalloc).
func TestProfileCallSite(t *testing.T) {
	for _, name := range []string{"goprog", "goprog-stripped"} {
		t.Run(name, func(t *testing.T) {
			full := build(t, "goprog", "go", "build", "-C", "TESTDATA/goprog", "-o", "OUT", ".")
			bin := full
			if name == "goprog-stripped" {
				bin = build(t, "goprog-stripped", "go", "build", "-C", "TESTDATA/goprog", "-ldflags=-s -w", "-o", "OUT", ".")
			}
			ret := callReturn(t, full, "main.caller", "main.heavy")
			heavy, _ := funcRange(t, full, "main.heavy")
			b, err := Open(bin)
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			base := b.Identity().Base
			names := func(fs []profile.SymbolFrame) string {
				var s []string
				for _, f := range fs {
					s = append(s, f.Function)
				}
				return strings.Join(s, ">")
			}
			if got := names(b.Lookup(ret - base)); got != "main.caller>main.mix" {
				t.Fatalf("the return address resolves to %s, not the inlined mix this test is about", got)
			}

			proc := &profile.Process{Pid: 7, Libs: mapLibs(t, bin, bin, 0)}
			th := &profile.Thread{Tid: 7}
			uf := func(a uint64) profile.Frame { return profile.Frame{Address: a, Category: profile.CategoryUser} }
			th.Samples.Add(th.InternStack([]profile.Frame{uf(heavy + 2), uf(ret)}), 1, -1)
			th.Samples.Add(th.InternStack([]profile.Frame{uf(ret)}), 2, -1)
			proc.Threads = []*profile.Thread{th}
			p := &profile.Profile{Processes: []*profile.Process{proc}}
			if _, err := Profile(p, Options{DebugRoot: t.TempDir()}); err != nil {
				t.Fatal(err)
			}
			lib := profile.FindLib(proc.Libs, ret)
			key, rel := lib.Key(), lib.Rel(ret)
			if got := names(p.Symbols.LookupFrame(key, rel, true)); got != "main.caller" {
				t.Errorf("caller frame at the return address = %s, want main.caller", got)
			}
			if got := names(p.Symbols.LookupFrame(key, rel, false)); got != "main.caller>main.mix" {
				t.Errorf("the same address as a leaf = %s, want main.caller>main.mix", got)
			}
		})
	}
}
