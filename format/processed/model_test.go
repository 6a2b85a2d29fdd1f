package processed

import (
	"time"

	"github.com/gprof-dev/gprof/profile"
)

// Addresses of the hand-built test model. app is mapped at its link address
// (offset 0); libc's mapping starts 0x1000 into the file, so its relative
// addresses are 0x1000 above the distance from Start.
const (
	appStart  = 0x400000
	libcStart = 0x7f0000000000

	mainRet     = appStart + 0x2050  // return address inside main, at an inlined helper call
	computeIP   = appStart + 0x3010  // leaf inside compute
	computeRet  = appStart + 0x3020  // compute calling memcpy; also sampled as a leaf
	memcpyIP    = libcStart + 0x100  // relative 0x1100
	unknownIP   = 0x900000           // in no lib
	kernelIP    = 0xffffffff81000100 // kernel, in no lib
	nosymIP     = appStart + 0x5000  // in app, but no symbols
	workerStart = appStart + 0x6000  // second process's thread entry
)

var (
	appKey    = profile.LibKey{DebugName: "app", BreakpadID: "AAAA0000000000000000000000000000A"}
	libcKey   = profile.LibKey{DebugName: "libc.so.6", BreakpadID: "CCCC0000000000000000000000000000C"}
	kernelKey = profile.LibKey{DebugName: "kernel"}
)

func testLibs() []profile.Lib {
	return []profile.Lib{
		{Start: appStart, End: appStart + 0x100000, Offset: 0, Name: "app", Path: "/bin/app",
			DebugName: appKey.DebugName, DebugPath: "/bin/app", BreakpadID: appKey.BreakpadID, CodeID: "0000aaaa", Arch: "x86_64"},
		{Start: libcStart, End: libcStart + 0x100000, Offset: 0x1000, Name: "libc.so.6", Path: "/lib/libc.so.6",
			DebugName: libcKey.DebugName, BreakpadID: libcKey.BreakpadID, Arch: "x86_64"},
	}
}

func testSymbols() *profile.SymbolTable {
	st := &profile.SymbolTable{}
	st.Add(appKey, 0x2050, []profile.SymbolFrame{
		{Function: "main", FuncAddr: 0x2000, FuncSize: 0x100, File: "main.c", Line: 10},
		{Function: "helper", File: "helper.h", Line: 20},
	})
	st.Add(appKey, 0x3010, []profile.SymbolFrame{{Function: "compute", FuncAddr: 0x3000, FuncSize: 0x80, File: "compute.c", Line: 5}})
	st.Add(appKey, 0x3020, []profile.SymbolFrame{{Function: "compute", FuncAddr: 0x3000, FuncSize: 0x80, File: "compute.c", Line: 7}})
	st.Add(appKey, 0x6000, []profile.SymbolFrame{{Function: "worker", FuncAddr: 0x6000, FuncSize: 0x10}})
	st.Add(libcKey, 0x1100, []profile.SymbolFrame{{Function: "memcpy", FuncAddr: 0x10f0, FuncSize: 0x40}})
	st.Add(kernelKey, kernelIP, []profile.SymbolFrame{{Function: "do_syscall_64", FuncAddr: 0xffffffff81000000, FuncSize: 0x200}})
	return st
}

// testProfile builds two processes: app (pid 100) with a main thread and a
// worker, and a second process (pid 200) with one thread.
func testProfile() *profile.Profile {
	p := &profile.Profile{
		Meta: profile.Meta{
			Product: "gprof", StartTime: time.UnixMilli(1700000000000), Interval: time.Millisecond,
			Arch: "x86_64", Platform: "Linux", OSCPU: "Linux 6.8.0", LogicalCPUs: 8, Duration: 10e6,
			Extra: map[string]string{"backend": "perf"}, LostEvents: 3,
		},
		Symbols: testSymbols(),
	}
	u, k := profile.CategoryUser, profile.CategoryKernel
	fr := func(a uint64, c profile.Category) profile.Frame { return profile.Frame{Address: a, Category: c} }

	main := &profile.Thread{Tid: 100, Name: "app-main", Main: true, End: -1}
	// Leaf first, as unwinders produce stacks.
	s1 := main.InternStack([]profile.Frame{fr(computeIP, u), fr(mainRet, u)})
	s2 := main.InternStack([]profile.Frame{fr(computeRet, u), fr(mainRet, u)})
	s3 := main.InternStack([]profile.Frame{fr(memcpyIP, u), fr(computeRet, u), fr(mainRet, u)})
	s4 := main.InternStack([]profile.Frame{fr(kernelIP, k), fr(memcpyIP, u), fr(computeRet, u), fr(mainRet, u)})
	main.Samples.Add(s1, 1e6, 900e3)
	main.Samples.Add(s2, 2e6, 1000e3)
	main.Samples.Add(s3, 3e6, -1)
	main.Samples.Add(s4, 4e6, 1234567)
	main.Samples.Add(profile.NoStack, 5e6, 0)
	main.Markers = []profile.Marker{{Name: "ProcessStart", Start: 0, End: 0, Phase: profile.PhaseInstant}}

	worker := &profile.Thread{Tid: 101, Name: "worker", Start: 1e6, End: 9e6}
	w1 := worker.InternStack([]profile.Frame{fr(unknownIP, u), fr(nosymIP, u)})
	w2 := worker.InternStack([]profile.Frame{{Label: "GC"}, fr(nosymIP, u)})
	worker.Samples.Add(w1, 2e6, 500e3)
	worker.Samples.Add(w2, 3e6, 500e3)
	worker.Markers = []profile.Marker{{Name: "ThreadExit", Start: 9e6, End: 9e6, Phase: profile.PhaseInstant}}

	other := &profile.Thread{Tid: 200, Name: "other", Main: true, End: -1}
	o1 := other.InternStack([]profile.Frame{fr(workerStart, u)})
	other.Samples.Add(o1, 6e6, 1e6)

	p.Processes = []*profile.Process{
		{Pid: 100, Name: "app", Start: 0, End: -1, Libs: testLibs(), Threads: []*profile.Thread{main, worker}, ExitCode: -1},
		{Pid: 200, Name: "other", Start: 5e5, End: 8e6, Libs: testLibs()[:1], Threads: []*profile.Thread{other}, ExitCode: 0},
	}
	return p
}
