//go:build linux

package perf

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"golang.org/x/sys/unix"

	"github.com/gprof-dev/gprof/attach/internal/proc"
	"github.com/gprof-dev/gprof/perfrecord"
)

// Attached processes sampled per CPU, their samples picked in the kernel.
//
// Only per-CPU events can have their interval varied (pace.go), and
// per-CPU events sample whatever runs: each sample of another process
// would cost a copy of its stack into the ring and its decoding, only to
// be dropped (on a busy 64-CPU host, gigabytes a second). So where the
// kernel lets gprof load BPF programs, attaching to processes opens
// per-CPU events with a program on each that keeps only the targets'
// samples: it returns 0, which tells the kernel to write nothing, for a
// process not in a map of followed process ids. A second program, on the
// task_newtask tracepoint, adds a followed process's children to the map
// as they are created, in the parent's own context: a child's first
// sample is kept, where the reader's FORK records would come too late for
// it. The decoder's own filter (targets) still has the last word; the
// map only saves the copies. Where no program can be loaded, attaching
// keeps perf's per-thread events, at a fixed interval, and says why.

// maxFollowed bounds the processes the map holds: a build may start
// thousands, and a full map keeps the next ones out (the decoder's
// filter would keep them, but their samples are not written).
const maxFollowed = 1 << 16

// pidFilter owns the map of followed processes and the fork program. The
// program on the sampling events is made with the map's descriptor
// (walkProgram with its gate, or gateProgram where no frame walker runs):
// an event takes one program only.
type pidFilter struct {
	pids   *ebpf.Map
	fork   *ebpf.Program
	forkFd int           // the tracepoint's event, the fork program on it
	gate   *ebpf.Program // the sampling events' program when no walker runs
}

// newPidFilter loads the map and the fork program, following pids whole
// and the processes of threads, whose threads the decoder picks.
func newPidFilter(pids, threads []int) (*pidFilter, error) {
	tp, pidOff, flagsOff, err := newtaskFields()
	if err != nil {
		return nil, err
	}
	f := &pidFilter{forkFd: -1}
	ok := false
	defer func() {
		if !ok {
			f.close()
		}
	}()
	if f.pids, err = ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.Hash, KeySize: 4, ValueSize: 1, MaxEntries: maxFollowed}); err != nil {
		return nil, err
	}
	for _, p := range threads {
		if err := f.add(p, false); err != nil {
			return nil, err
		}
	}
	for _, p := range pids {
		if err := f.add(p, true); err != nil {
			return nil, err
		}
	}
	if f.fork, err = ebpf.NewProgramWithOptions(&ebpf.ProgramSpec{
		Type: ebpf.TracePoint, License: "Dual MIT/GPL", Instructions: forkProgram(f.pids.FD(), pidOff, flagsOff),
	}, ebpf.ProgramOptions{}); err != nil {
		return nil, err
	}
	// The tracepoint's event on one CPU: a program on a tracepoint runs
	// wherever it is hit.
	a := unix.PerfEventAttr{Type: perfrecord.TypeTracepoint, Config: tp, Sample: 1, Wakeup: 1}
	a.Size = uint32(unsafe.Sizeof(a))
	if f.forkFd, err = perfEventOpen(&a, -1, 0, -1, unix.PERF_FLAG_FD_CLOEXEC); err != nil {
		return nil, fmt.Errorf("open the task_newtask tracepoint: %w", err)
	}
	if err := unix.IoctlSetInt(f.forkFd, unix.PERF_EVENT_IOC_SET_BPF, f.fork.FD()); err != nil {
		return nil, fmt.Errorf("attach the fork program: %w", err)
	}
	if err := unix.IoctlSetInt(f.forkFd, unix.PERF_EVENT_IOC_ENABLE, 0); err != nil {
		return nil, err
	}
	ok = true
	return f, nil
}

// newtaskFields reads task_newtask's id, and where its record has the new
// task's id and its clone flags.
func newtaskFields() (id uint64, pidOff, flagsOff int16, err error) {
	root := tracefs()
	if root == "" {
		return 0, 0, 0, errors.New("tracefs is not mounted")
	}
	text, err := os.ReadFile(filepath.Join(root, "events", "task", "task_newtask", "format"))
	if err != nil {
		return 0, 0, 0, err
	}
	f, err := perfrecord.ParseTraceFormat(text)
	if err != nil {
		return 0, 0, 0, err
	}
	pidOff, flagsOff = -1, -1
	for _, fl := range f.Fields {
		switch {
		case fl.Name == "pid" && fl.Size == 4:
			pidOff = int16(fl.Offset)
		case fl.Name == "clone_flags" && fl.Size == 8:
			flagsOff = int16(fl.Offset)
		}
	}
	if f.ID == 0 || pidOff < 0 || flagsOff < 0 {
		return 0, 0, 0, errors.New("task_newtask's format has no id, pid or clone_flags")
	}
	return f.ID, pidOff, flagsOff, nil
}

// forkProgram assembles the fork program: when the task creating a new
// one is of a process followed whole and the new task is a process of its
// own (no CLONE_THREAD), follow the new one whole.
func forkProgram(pids int, pidOff, flagsOff int16) asm.Instructions {
	const (
		ctx      = asm.R6
		keyPid   = -4
		keyChild = -8
		value    = -9
	)
	return asm.Instructions{
		asm.Mov.Reg(ctx, asm.R1),
		asm.LoadMem(asm.R1, ctx, flagsOff, asm.DWord),
		asm.And.Imm(asm.R1, unix.CLONE_THREAD),
		asm.JNE.Imm(asm.R1, 0, "out"),
		asm.FnGetCurrentPidTgid.Call(),
		asm.RSh.Imm(asm.R0, 32),
		asm.StoreMem(asm.R10, keyPid, asm.R0, asm.Word),
		asm.LoadMapPtr(asm.R1, pids),
		asm.Mov.Reg(asm.R2, asm.R10),
		asm.Add.Imm(asm.R2, keyPid),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "out"),
		asm.LoadMem(asm.R1, asm.R0, 0, asm.Byte),
		asm.JNE.Imm(asm.R1, followWhole, "out"),
		asm.LoadMem(asm.R1, ctx, pidOff, asm.Word),
		asm.StoreMem(asm.R10, keyChild, asm.R1, asm.Word),
		asm.StoreImm(asm.R10, value, followWhole, asm.Byte),
		asm.LoadMapPtr(asm.R1, pids),
		asm.Mov.Reg(asm.R2, asm.R10),
		asm.Add.Imm(asm.R2, keyChild),
		asm.Mov.Reg(asm.R3, asm.R10),
		asm.Add.Imm(asm.R3, value),
		asm.Mov.Imm(asm.R4, 0), // BPF_ANY
		asm.FnMapUpdateElem.Call(),
		asm.Mov.Imm(asm.R0, 0).WithSymbol("out"),
		asm.Return(),
	}
}

// gateInstructions drop a sample of a process the map pids does not
// hold: they return 0 from the program. The sampled task's process id is
// the word at key on the stack; they go on at the instruction labelled
// "followed", with R0 to R5 not kept.
func gateInstructions(pids int, key int16) asm.Instructions {
	return asm.Instructions{
		asm.LoadMapPtr(asm.R1, pids),
		asm.Mov.Reg(asm.R2, asm.R10),
		asm.Add.Imm(asm.R2, int32(key)),
		asm.FnMapLookupElem.Call(),
		asm.JNE.Imm(asm.R0, 0, "followed"),
		asm.Mov.Imm(asm.R0, 0),
		asm.Return(),
	}
}

// gateProgram is the sampling events' program where no frame walker
// runs: the gate, then keep the sample.
func gateProgram(pids int) asm.Instructions {
	head := asm.Instructions{
		asm.FnGetCurrentPidTgid.Call(),
		asm.RSh.Imm(asm.R0, 32),
		asm.StoreMem(asm.R10, -4, asm.R0, asm.Word),
	}
	return append(append(head, gateInstructions(pids, -4)...),
		asm.Mov.Imm(asm.R0, 1).WithSymbol("followed"),
		asm.Return(),
	)
}

// loadGate loads gateProgram, for recordings without the frame walker.
func (f *pidFilter) loadGate() error {
	if f.gate != nil {
		return nil
	}
	var err error
	f.gate, err = ebpf.NewProgramWithOptions(&ebpf.ProgramSpec{
		Type: ebpf.PerfEvent, License: "Dual MIT/GPL", Instructions: gateProgram(f.pids.FD()),
	}, ebpf.ProgramOptions{})
	return err
}

// attach runs the gate on each sample of event fd.
func (f *pidFilter) attach(fd int) error {
	if err := f.loadGate(); err != nil {
		return fmt.Errorf("load the process filter: %w", err)
	}
	if err := unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_SET_BPF, f.gate.FD()); err != nil {
		return fmt.Errorf("attach the process filter: %w", err)
	}
	return nil
}

// The map's values: a process followed whole, with the processes it
// starts (-p), or one whose threads attached alone (-t) the decoder's
// filter picks, whose children are not followed.
const (
	followWhole   = 1
	followThreads = 2
)

// add follows process pid, whole or for some of its threads.
func (f *pidFilter) add(pid int, whole bool) error {
	v := uint8(followThreads)
	if whole {
		v = followWhole
	}
	return f.pids.Put(uint32(pid), v)
}

// follows reports whether the map follows process pid whole.
func (f *pidFilter) follows(pid int) bool {
	var v uint8
	return f.pids.Lookup(uint32(pid), &v) == nil && v == followWhole
}

// forget stops following process pid, which has gone (its id may come
// back for another process).
func (f *pidFilter) forget(pid int) {
	if f != nil {
		f.pids.Delete(uint32(pid))
	}
}

func (f *pidFilter) close() {
	if f == nil {
		return
	}
	if f.forkFd >= 0 {
		unix.Close(f.forkFd)
	}
	if f.gate != nil {
		f.gate.Close()
	}
	if f.fork != nil {
		f.fork.Close()
	}
	if f.pids != nil {
		f.pids.Close()
	}
}

// startFilter loads the process filter for a recording attached to
// processes, where their events can be paced; where it cannot be loaded,
// the recording is per thread and filterErr says why.
func (s *perfSession) startFilter() {
	if forceLayout != nil {
		return // a test's layout, with the decoder's filter alone
	}
	if len(s.opts.Command) > 0 || s.opts.SystemWide || !s.paceable() {
		return
	}
	var threads []int
	for _, tid := range s.opts.Tids {
		// A thread attached alone: its process passes the gate, the
		// decoder's filter keeps the thread.
		if pid, _, _, ok := proc.TaskInfo(tid); ok {
			threads = append(threads, pid)
		}
	}
	f, err := newPidFilter(s.opts.Pids, threads)
	if err != nil {
		s.filterErr = err
		return
	}
	s.filter = f
}
