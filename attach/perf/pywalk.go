//go:build linux

package perf

import (
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	ebpfperf "github.com/cilium/ebpf/perf"
	"golang.org/x/sys/unix"

	"github.com/gprof-dev/gprof/attach"
	"github.com/gprof-dev/gprof/attach/internal/proc"
)

// An interpreter's frames at the sample, not after it.
//
// The perf backend reads a thread's Python stack when it decodes the
// sample, a millisecond or more later; the thread ran on meanwhile, and a
// program whose time is in C extensions called from short Python
// functions has moved to another function by then (the read is checked,
// event.Sample.InterpLate, and dropped). So where the kernel lets it, a
// small BPF program runs on each sample of a thread gprof has found an
// interpreter in, as the sample is taken, while the thread is held by the
// interrupt: it copies the thread state and the chain of frames (the bytes
// a walk reads of each, as attach.InterpWalk describes them) into a record
// of its own, which the decoder hands to Options.Interp in place of the
// process's memory for those addresses. Code objects, names and line
// tables, which live as long as their function, are still read from the
// process.
//
// The program is assembled here, not compiled from C: it is thirty-odd
// instructions, and gprof then needs no BPF toolchain to build.

// Layout of a snapshot record (little endian, as the program writes it).
const (
	snapPidTgid = 0  // tid | pid<<32
	snapTime    = 8  // bpf_ktime_get_ns: CLOCK_MONOTONIC, as samples' times
	snapIP      = 16 // the interrupted registers (user mode unless cs says)
	snapSP      = 24
	snapCS      = 32
	snapTState  = 40 // where the thread state is
	snapCFrame  = 48 // the _PyCFrame read (3.11, 3.12), else 0
	snapFirst   = 56 // the innermost frame
	snapCount   = 64 // u32: frames copied
	snapTSOK    = 68 // u32: 1 when the thread state was copied
	snapHeader  = 72
	// The thread state's bytes follow the header, then each frame's
	// address and bytes in a slot.
	snapTSMax   = 256
	snapFrames  = snapHeader + snapTSMax
	snapSlotMax = 128 // a frame's bytes
	snapSlot    = 8 + snapSlotMax
	snapDepth   = 64 // frames copied at most; the outer ones are read later
	snapSize    = snapFrames + snapDepth*snapSlot
)

// The threads map's value (the program's view of an attach.InterpWalk).
const (
	thrTState   = 0  // u64
	thrTSSpan   = 8  // u32
	thrFrameAt  = 12 // u32
	thrCFrame   = 16 // u32: 1 when FrameAt holds a _PyCFrame pointer
	thrCFCur    = 20 // u32
	thrFrSpan   = 24 // u32
	thrBack     = 28 // u32
	thrSize     = 32
	maxWalkTids = 1 << 16
)

// The processes map's value: a thread value's fields but the thread
// state's address (which it finds), and how to find it.
const (
	procThreads    = 0 // u64: where the first thread state's address is
	procNext       = 32
	procID         = 36
	procIDIndirect = 40
	procIDOffset   = 44
	procSize       = 48
	maxWalkProcs   = 4096
	// maxThreadScan bounds the thread states the program looks at for an
	// unknown thread's: later ones are learnt from a stack read late.
	maxThreadScan = 64
)

// x86-64 struct pt_regs offsets, the program's context.
const (
	ptRegsIP = 128
	ptRegsCS = 136
	ptRegsSP = 152
)

// pyWalker owns the program, its maps and the ring it writes to.
type pyWalker struct {
	prog    *ebpf.Program
	procs   *ebpf.Map
	threads *ebpf.Map
	scratch *ebpf.Map
	events  *ebpf.Map
	reader  *ebpfperf.Reader
	rec     ebpfperf.Record
	known   map[int]attach.InterpWalk // the threads in the threads map
	walks   map[int]attach.InterpWalk // by process: how its threads' snapshots were made
	listed  map[int]bool              // the processes in the processes map
	// snaps holds each thread's snapshots not yet matched, oldest first.
	snaps map[int][]*pySnap
	// written counts the snapshots read, matched those a sample took,
	// missed the samples of a thread in the map that found none; lost
	// the snapshots the ring had no room for.
	written, matched, missed, lost uint64
	// armed says a process or thread was ever put in the maps: until
	// then the program writes nothing, and drain need not ask the ring
	// (an epoll_wait each of the reader's rounds).
	armed bool
}

// newPyWalker loads the program, gated by the map of followed processes
// gate where it is not 0; an error says why it cannot be (no BPF in this
// kernel, not permitted, an architecture the program is not for).
func newPyWalker(gate int) (*pyWalker, error) {
	if runtime.GOARCH != "amd64" {
		return nil, errors.New("the frame walker is for x86-64")
	}
	w := &pyWalker{known: map[int]attach.InterpWalk{}, walks: map[int]attach.InterpWalk{}, listed: map[int]bool{}, snaps: map[int][]*pySnap{}}
	ok := false
	defer func() {
		if !ok {
			w.close()
		}
	}()
	var err error
	if w.threads, err = ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.LRUHash, KeySize: 4, ValueSize: thrSize, MaxEntries: maxWalkTids}); err != nil {
		return nil, err
	}
	if w.procs, err = ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.Hash, KeySize: 4, ValueSize: procSize, MaxEntries: maxWalkProcs}); err != nil {
		return nil, err
	}
	if w.scratch, err = ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.PerCPUArray, KeySize: 4, ValueSize: snapSize, MaxEntries: 1}); err != nil {
		return nil, err
	}
	if w.events, err = ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.PerfEventArray}); err != nil {
		return nil, err
	}
	if w.prog, err = ebpf.NewProgramWithOptions(&ebpf.ProgramSpec{
		Type: ebpf.PerfEvent, License: "Dual MIT/GPL", Instructions: walkProgram(w.procs.FD(), w.threads.FD(), w.scratch.FD(), w.events.FD(), gate),
	}, ebpf.ProgramOptions{}); err != nil {
		return nil, err
	}
	// Room for a quarter second of deep stacks at 1 kHz on a CPU; the
	// reader is drained with every round of the sample rings.
	if w.reader, err = ebpfperf.NewReaderWithOptions(w.events, 1<<20, ebpfperf.ReaderOptions{WakeupEvents: 1 << 20}); err != nil {
		return nil, err
	}
	w.reader.SetDeadline(time.Unix(1, 0)) // never wait: drain reads what is there
	ok = true
	return w, nil
}

// walkProgram assembles the program: look the sampled thread up in the
// threads map (or, for a thread of a process in the processes map, find
// its thread state in the interpreter's list and add it), copy its thread
// state, follow it to the innermost frame, copy up to snapDepth frames
// along their back links, and write the snapshot out. It always keeps the
// sample (returns 1), but for a process the map gate does not hold, where
// gate is not 0 (see filter.go): that sample it drops.
func walkProgram(procs, threads, scratch, events, gate int) asm.Instructions {
	const (
		ctx, frame, info, buf = asm.R6, asm.R7, asm.R8, asm.R9
		keyTid                = -4  // u32 map key
		keyZero               = -8  // u32 map key
		cfCur                 = -16 // u64 read of _PyCFrame.current_frame
		count                 = -24 // u64 loop counter
		keyPid                = -28 // u32 map key
		tsAddr                = -40 // u64: a thread state looked at
		idRead                = -48 // u64: its thread's id
		scanned               = -56 // u64 loop counter
		found                 = -56 - thrSize
	)
	head := asm.Instructions{
		asm.Mov.Reg(ctx, asm.R1),
		asm.FnGetCurrentPidTgid.Call(),
		asm.Mov.Reg(frame, asm.R0), // kept in frame until stored
		asm.StoreMem(asm.R10, keyTid, asm.R0, asm.Word),
		asm.RSh.Imm(asm.R0, 32),
		asm.StoreMem(asm.R10, keyPid, asm.R0, asm.Word),
	}
	if gate != 0 {
		head = append(head, gateInstructions(gate, keyPid)...)
	}
	return append(head, asm.Instructions{
		asm.LoadMapPtr(asm.R1, threads).WithSymbol("followed"),
		asm.Mov.Reg(asm.R2, asm.R10),
		asm.Add.Imm(asm.R2, keyTid),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "discover"),
		asm.Mov.Reg(info, asm.R0),
		asm.Ja.Label("known"),

		// A thread not in the map, of a process that is: look for its
		// thread state in the interpreter's list.
		asm.LoadMapPtr(asm.R1, procs).WithSymbol("discover"),
		asm.Mov.Reg(asm.R2, asm.R10),
		asm.Add.Imm(asm.R2, keyPid),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "keep"),
		asm.Mov.Reg(info, asm.R0),
		asm.LoadMem(asm.R1, info, 8, asm.DWord), // the walk's fields
		asm.StoreMem(asm.R10, found+8, asm.R1, asm.DWord),
		asm.LoadMem(asm.R1, info, 16, asm.DWord),
		asm.StoreMem(asm.R10, found+16, asm.R1, asm.DWord),
		asm.LoadMem(asm.R1, info, 24, asm.DWord),
		asm.StoreMem(asm.R10, found+24, asm.R1, asm.DWord),
		asm.Mov.Imm(asm.R1, 0),
		asm.StoreMem(asm.R10, scanned, asm.R1, asm.DWord),
		asm.Mov.Reg(asm.R1, asm.R10),
		asm.Add.Imm(asm.R1, tsAddr),
		asm.Mov.Imm(asm.R2, 8),
		asm.LoadMem(asm.R3, info, procThreads, asm.DWord),
		asm.FnProbeReadUser.Call(),
		asm.JNE.Imm(asm.R0, 0, "keep"),
		asm.LoadMem(asm.R1, asm.R10, scanned, asm.DWord).WithSymbol("scan"),
		asm.JGE.Imm(asm.R1, maxThreadScan, "keep"),
		asm.Add.Imm(asm.R1, 1),
		asm.StoreMem(asm.R10, scanned, asm.R1, asm.DWord),
		asm.LoadMem(asm.R3, asm.R10, tsAddr, asm.DWord),
		asm.JEq.Imm(asm.R3, 0, "keep"),
		asm.Mov.Imm(asm.R1, 0),
		asm.StoreMem(asm.R10, idRead, asm.R1, asm.DWord),
		asm.LoadMem(asm.R1, info, procID, asm.Word),
		asm.Add.Reg(asm.R3, asm.R1),
		asm.Mov.Reg(asm.R1, asm.R10),
		asm.Add.Imm(asm.R1, idRead),
		asm.Mov.Imm(asm.R2, 8),
		asm.FnProbeReadUser.Call(),
		asm.JNE.Imm(asm.R0, 0, "keep"),
		asm.LoadMem(asm.R1, info, procIDIndirect, asm.Word),
		asm.JEq.Imm(asm.R1, 0, "compare"),
		asm.LoadMem(asm.R3, asm.R10, idRead, asm.DWord),
		asm.LoadMem(asm.R1, info, procIDOffset, asm.Word),
		asm.Add.Reg(asm.R3, asm.R1),
		asm.Mov.Imm(asm.R1, 0),
		asm.StoreMem(asm.R10, idRead, asm.R1, asm.DWord),
		asm.Mov.Reg(asm.R1, asm.R10),
		asm.Add.Imm(asm.R1, idRead),
		asm.Mov.Imm(asm.R2, 4),
		asm.FnProbeReadUser.Call(),
		asm.JNE.Imm(asm.R0, 0, "keep"),
		asm.LoadMem(asm.R1, asm.R10, idRead, asm.Word).WithSymbol("compare"),
		asm.LoadMem(asm.R2, asm.R10, keyTid, asm.Word),
		asm.JEq.Reg(asm.R1, asm.R2, "found"),
		asm.LoadMem(asm.R3, asm.R10, tsAddr, asm.DWord),
		asm.LoadMem(asm.R1, info, procNext, asm.Word),
		asm.Add.Reg(asm.R3, asm.R1),
		asm.Mov.Reg(asm.R1, asm.R10),
		asm.Add.Imm(asm.R1, tsAddr),
		asm.Mov.Imm(asm.R2, 8),
		asm.FnProbeReadUser.Call(),
		asm.JNE.Imm(asm.R0, 0, "keep"),
		asm.Ja.Label("scan"),
		asm.LoadMem(asm.R1, asm.R10, tsAddr, asm.DWord).WithSymbol("found"),
		asm.StoreMem(asm.R10, found+thrTState, asm.R1, asm.DWord),
		asm.LoadMapPtr(asm.R1, threads),
		asm.Mov.Reg(asm.R2, asm.R10),
		asm.Add.Imm(asm.R2, keyTid),
		asm.Mov.Reg(asm.R3, asm.R10),
		asm.Add.Imm(asm.R3, found),
		asm.Mov.Imm(asm.R4, 0), // BPF_ANY
		asm.FnMapUpdateElem.Call(),
		asm.Mov.Reg(info, asm.R10),
		asm.Add.Imm(info, found),

		asm.StoreImm(asm.R10, keyZero, 0, asm.Word).WithSymbol("known"),
		asm.LoadMapPtr(asm.R1, scratch),
		asm.Mov.Reg(asm.R2, asm.R10),
		asm.Add.Imm(asm.R2, keyZero),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "keep"),
		asm.Mov.Reg(buf, asm.R0),
		asm.StoreMem(buf, snapPidTgid, frame, asm.DWord),
		asm.FnKtimeGetNs.Call(),
		asm.StoreMem(buf, snapTime, asm.R0, asm.DWord),
		asm.LoadMem(asm.R1, ctx, ptRegsIP, asm.DWord),
		asm.StoreMem(buf, snapIP, asm.R1, asm.DWord),
		asm.LoadMem(asm.R1, ctx, ptRegsSP, asm.DWord),
		asm.StoreMem(buf, snapSP, asm.R1, asm.DWord),
		asm.LoadMem(asm.R1, ctx, ptRegsCS, asm.DWord),
		asm.StoreMem(buf, snapCS, asm.R1, asm.DWord),
		asm.LoadMem(asm.R3, info, thrTState, asm.DWord),
		asm.JEq.Imm(asm.R3, 0, "keep"),
		asm.StoreMem(buf, snapTState, asm.R3, asm.DWord),
		asm.Mov.Imm(asm.R1, 0),
		asm.StoreMem(buf, snapCFrame, asm.R1, asm.DWord),
		asm.StoreMem(buf, snapFirst, asm.R1, asm.DWord),
		asm.StoreMem(buf, snapCount, asm.R1, asm.DWord), // and snapTSOK
		asm.StoreMem(asm.R10, count, asm.R1, asm.DWord),

		// The thread state.
		asm.Mov.Reg(asm.R1, buf),
		asm.Add.Imm(asm.R1, snapHeader),
		asm.LoadMem(asm.R2, info, thrTSSpan, asm.Word),
		asm.JGT.Imm(asm.R2, snapTSMax, "out"),
		asm.FnProbeReadUser.Call(),
		asm.JNE.Imm(asm.R0, 0, "out"),
		asm.StoreImm(buf, snapTSOK, 1, asm.Word),
		asm.LoadMem(asm.R1, info, thrFrameAt, asm.Word),
		asm.And.Imm(asm.R1, snapTSMax-8), // 8-aligned, within the copy
		asm.Mov.Reg(asm.R2, buf),
		asm.Add.Reg(asm.R2, asm.R1),
		asm.LoadMem(frame, asm.R2, snapHeader, asm.DWord),
		asm.LoadMem(asm.R1, info, thrCFrame, asm.Word),
		asm.JEq.Imm(asm.R1, 0, "walk"),
		// 3.11, 3.12: the thread state points at a _PyCFrame, which
		// points at the frame.
		asm.StoreMem(buf, snapCFrame, frame, asm.DWord),
		asm.JEq.Imm(frame, 0, "out"),
		asm.Mov.Reg(asm.R1, asm.R10),
		asm.Add.Imm(asm.R1, cfCur),
		asm.Mov.Imm(asm.R2, 8),
		asm.LoadMem(asm.R3, info, thrCFCur, asm.Word),
		asm.Add.Reg(asm.R3, frame),
		asm.FnProbeReadUser.Call(),
		asm.JNE.Imm(asm.R0, 0, "out"),
		asm.LoadMem(frame, asm.R10, cfCur, asm.DWord),

		// The frames, innermost first.
		asm.StoreMem(buf, snapFirst, frame, asm.DWord).WithSymbol("walk"),
		asm.LoadMem(asm.R1, asm.R10, count, asm.DWord).WithSymbol("loop"),
		asm.JGE.Imm(asm.R1, snapDepth, "out"),
		asm.JEq.Imm(frame, 0, "out"),
		asm.Mul.Imm(asm.R1, snapSlot),
		asm.Mov.Reg(asm.R3, buf),
		asm.Add.Reg(asm.R3, asm.R1),
		asm.StoreMem(asm.R3, snapFrames, frame, asm.DWord),
		asm.Mov.Reg(asm.R1, asm.R3),
		asm.Add.Imm(asm.R1, snapFrames+8),
		asm.LoadMem(asm.R2, info, thrFrSpan, asm.Word),
		asm.JGT.Imm(asm.R2, snapSlotMax, "out"),
		asm.Mov.Reg(asm.R3, frame),
		asm.FnProbeReadUser.Call(),
		asm.JNE.Imm(asm.R0, 0, "out"),
		asm.LoadMem(asm.R1, asm.R10, count, asm.DWord),
		asm.JGE.Imm(asm.R1, snapDepth, "out"), // for the verifier: reloaded
		asm.Mov.Reg(asm.R2, asm.R1),
		asm.Add.Imm(asm.R2, 1),
		asm.StoreMem(asm.R10, count, asm.R2, asm.DWord),
		asm.StoreMem(buf, snapCount, asm.R2, asm.Word),
		asm.Mul.Imm(asm.R1, snapSlot),
		asm.LoadMem(asm.R3, info, thrBack, asm.Word),
		asm.And.Imm(asm.R3, snapSlotMax-8),
		asm.Add.Reg(asm.R1, asm.R3),
		asm.Add.Reg(asm.R1, buf),
		asm.LoadMem(frame, asm.R1, snapFrames+8, asm.DWord),
		asm.Ja.Label("loop"),

		// Write the snapshot: the header, the thread state and the
		// frames copied.
		asm.LoadMem(asm.R5, asm.R10, count, asm.DWord).WithSymbol("out"),
		asm.JGT.Imm(asm.R5, snapDepth, "keep"),
		asm.Mul.Imm(asm.R5, snapSlot),
		asm.Add.Imm(asm.R5, snapFrames),
		asm.Mov.Reg(asm.R1, ctx),
		asm.LoadMapPtr(asm.R2, events),
		asm.LoadImm(asm.R3, 0xffffffff, asm.DWord), // BPF_F_CURRENT_CPU
		asm.Mov.Reg(asm.R4, buf),
		asm.FnPerfEventOutput.Call(),
		asm.Mov.Imm(asm.R0, 1).WithSymbol("keep"),
		asm.Return(),
	}...)
}

// attach runs the program on each sample of the event fd (and of the
// events it is inherited to).
func (w *pyWalker) attach(fd int) error {
	if err := unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_SET_BPF, w.prog.FD()); err != nil {
		return fmt.Errorf("attach the Python frame walker: %w", err)
	}
	return nil
}

// walkable reports whether the program can follow walk wk.
func walkable(wk attach.InterpWalk) bool {
	return wk.TStateSpan <= snapTSMax && wk.FrameSpan <= snapSlotMax && wk.FrameAt >= 0 && wk.FrameAt+8 <= int64(wk.TStateSpan) &&
		wk.FrameAt%8 == 0 && wk.Back >= 0 && wk.Back+8 <= int64(wk.FrameSpan) && wk.Back%8 == 0 &&
		wk.CFrameCurrent < 1<<16 && wk.Next >= 0 && wk.Next < 1<<16 && wk.ThreadID >= 0 && wk.ThreadID < 1<<16 &&
		wk.IDOffset >= 0 && wk.IDOffset < 1<<16
}

// walkFields writes the fields a thread value and a process value share.
func walkFields(v []byte, wk attach.InterpWalk) {
	le := binary.LittleEndian
	le.PutUint32(v[thrTSSpan:], uint32(wk.TStateSpan))
	le.PutUint32(v[thrFrameAt:], uint32(wk.FrameAt))
	if wk.CFrameCurrent >= 0 {
		le.PutUint32(v[thrCFrame:], 1)
		le.PutUint32(v[thrCFCur:], uint32(wk.CFrameCurrent))
	}
	le.PutUint32(v[thrFrSpan:], uint32(wk.FrameSpan))
	le.PutUint32(v[thrBack:], uint32(wk.Back))
}

// set starts (or updates) snapshots of thread tid of process pid, walked
// as wk says, and lets the program find the process's other threads.
func (w *pyWalker) set(pid, tid int, wk attach.InterpWalk) {
	if !walkable(wk) {
		return // read late, as without the program
	}
	le := binary.LittleEndian
	if _, ok := w.walks[pid]; !ok {
		w.walks[pid] = wk
	}
	if !w.listed[pid] && wk.Threads != 0 {
		w.listed[pid] = true
		var v [procSize]byte
		le.PutUint64(v[procThreads:], wk.Threads)
		walkFields(v[:], wk)
		le.PutUint32(v[procNext:], uint32(wk.Next))
		le.PutUint32(v[procID:], uint32(wk.ThreadID))
		if wk.IDIndirect {
			le.PutUint32(v[procIDIndirect:], 1)
		}
		le.PutUint32(v[procIDOffset:], uint32(wk.IDOffset))
		_ = w.procs.Put(uint32(pid), v[:])
		w.armed = true
	}
	if wk.TState == 0 {
		return
	}
	if old, ok := w.known[tid]; ok && old == wk {
		return
	}
	w.known[tid] = wk
	var v [thrSize]byte
	le.PutUint64(v[thrTState:], wk.TState)
	walkFields(v[:], wk)
	_ = w.threads.Put(uint32(tid), v[:])
	w.armed = true
}

// forgetProcess stops looking for the threads of pid (it exited or
// exec'd).
func (w *pyWalker) forgetProcess(pid int) {
	if w == nil {
		return
	}
	delete(w.walks, pid)
	if w.listed[pid] {
		delete(w.listed, pid)
		_ = w.procs.Delete(uint32(pid))
	}
}

// forget stops snapshots of tid (it exited).
func (w *pyWalker) forget(tid int) {
	if w == nil {
		return
	}
	if _, ok := w.known[tid]; ok {
		delete(w.known, tid)
		_ = w.threads.Delete(uint32(tid))
	}
	delete(w.snaps, tid)
}

// drain reads the snapshots written so far.
func (w *pyWalker) drain() {
	if w == nil || !w.armed {
		return
	}
	for {
		err := w.reader.ReadInto(&w.rec)
		if err != nil {
			return // os.ErrDeadlineExceeded: all read; or closed
		}
		w.lost += w.rec.LostSamples
		if s := parseSnap(w.rec.RawSample); s != nil {
			w.written++
			q := w.snaps[s.tid]
			if len(q) >= maxQueued {
				q = q[1:]
			}
			w.snaps[s.tid] = append(q, s)
		}
	}
}

// maxQueued bounds the snapshots kept of a thread: those of its samples
// the decoder drops (pacing's repeats) are never taken.
const maxQueued = 4096

// snapSlack is how far a sample's time may be from its snapshot's: the
// program runs as the sample is taken, the sample's time is read just
// after.
const snapSlack = 200e3

// snapKeep is how long a snapshot waits for its sample: the rings are
// read in rounds, CPU after CPU, so a thread's samples come out of time
// order by up to a round.
const snapKeep = 2e9

// take returns the snapshot of tid's sample at time t (event.Now's clock)
// with user instruction pointer ip (0 when unknown), and the walk it was
// made with; nil when there is none.
func (w *pyWalker) take(pid, tid int, t int64, ip uint64) (*pySnap, attach.InterpWalk) {
	if w == nil {
		return nil, attach.InterpWalk{}
	}
	wk, ok := w.walks[pid]
	if !ok {
		return nil, attach.InterpWalk{}
	}
	q := w.snaps[tid]
	best, k := int64(snapSlack+1), -1
	keep := q[:0]
	for _, s := range q {
		if s.time < t-snapKeep {
			continue // its sample is gone
		}
		keep = append(keep, s)
		d := abs(s.time - t)
		if d < best && s.pid == pid && (ip == 0 || !s.user || s.ip == ip) {
			best, k = d, len(keep)-1
		}
	}
	var found *pySnap
	if k >= 0 {
		found = keep[k]
		keep = append(keep[:k], keep[k+1:]...)
	}
	if len(keep) == 0 {
		delete(w.snaps, tid)
	} else {
		w.snaps[tid] = keep
	}
	if found == nil {
		w.missed++
		return nil, attach.InterpWalk{}
	}
	w.matched++
	return found, wk
}

func abs(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

func (w *pyWalker) close() {
	if w == nil {
		return
	}
	if w.reader != nil {
		w.reader.Close()
	}
	w.prog.Close()
	w.events.Close()
	w.scratch.Close()
	w.threads.Close()
	w.procs.Close()
}

// startWalker loads the frame walker where the recording reads
// interpreter stacks; where it cannot, stacks are read after their
// samples and the decoder says why once it finds an interpreter.
func (s *perfSession) startWalker() {
	if s.opts.Interp == nil || s.opts.InterpWalk == nil {
		return
	}
	gate := 0
	if s.filter != nil {
		gate = s.filter.pids.FD()
	}
	w, err := newPyWalker(gate)
	if err != nil {
		s.noWalker(err)
		return
	}
	s.walker = w
	s.dec.walker, s.dec.interpWalk = w, s.opts.InterpWalk
}

// noWalker records why the frame walker is not there, for the decoder
// to say once it finds an interpreter, and for the profile's metadata.
func (s *perfSession) noWalker(err error) {
	s.walkerErr = err
	s.dec.noWalker = "Python stacks are read a moment after their samples, not at them (" + walkerWhy(err) +
		"): where the Python callers changed meanwhile a sample keeps its native frames only; --backend ptrace reads them at the sample"
}

// walkerWhy says in a few words why the walker could not be loaded.
func walkerWhy(err error) string {
	switch {
	case errors.Is(err, unix.EPERM), errors.Is(err, unix.EACCES):
		return "loading a BPF program needs root or CAP_BPF and CAP_PERFMON"
	case errors.Is(err, unix.ENOSYS):
		return "this kernel has no BPF"
	}
	return "the BPF frame walker: " + err.Error()
}

// walkFrames runs the frame walker on the samples of event fd, or where
// there is none, the process filter (filter.go) where there is one.
func (s *perfSession) walkFrames(fd int) error {
	if s.walker != nil {
		err := s.walker.attach(fd)
		if err == nil {
			return nil
		}
		s.walker.close()
		s.walker, s.dec.walker = nil, nil
		s.noWalker(err)
	}
	if s.filter != nil {
		return s.filter.attach(fd)
	}
	return nil
}

// stats describes how the walker went, for the profile's metadata.
func (w *pyWalker) stats() string {
	return fmt.Sprintf("%d snapshots, %d taken by their samples, %d samples of Python processes without one, %d lost",
		w.written, w.matched, w.missed, w.lost)
}

// walkProcess tells the frame walker of a process attached to, before
// its events are opened, where its interpreter is, if it runs one: its
// first samples then have their frames copied too, rather than those
// until the first is decoded (tens of milliseconds) being read late.
func (s *perfSession) walkProcess(pid int) {
	if s.walker == nil || s.opts.InterpFind == nil {
		return
	}
	mem := attach.ProcessMemory(pid)
	s.opts.InterpFind(pid, mem)
	tids, _ := proc.ListTasks(pid)
	for i, tid := range tids {
		if i == 8 {
			break // the program finds the others by their ids
		}
		if s.opts.Interp(pid, tid, mem) == nil {
			continue
		}
		if wk, ok := s.opts.InterpWalk(pid, tid); ok {
			s.walker.set(pid, tid, wk)
			return
		}
	}
}
