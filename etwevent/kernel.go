package etwevent

import (
	"encoding/binary"
	"strings"
)

// Classic event groups (the high byte of a HookID). A live session sees the
// same events keyed by provider GUID and opcode; KindOf maps both.
const (
	GroupHeader    = 0x00
	GroupProcess   = 0x03 // Process; also Image Load (type 10)
	GroupThread    = 0x05
	GroupPerfInfo  = 0x0F
	GroupImage     = 0x14
	GroupStackWalk = 0x18
)

// Kernel provider GUIDs as a real-time session reports them.
var (
	ProcessGUID   = ParseGUID("3d6fa8d0-fe05-11d0-9dda-00c04fd7ba7c")
	ThreadGUID    = ParseGUID("3d6fa8d1-fe05-11d0-9dda-00c04fd7ba7c")
	ImageGUID     = ParseGUID("2cb15d1d-5fc1-11d2-abe1-00a0c911f518")
	PerfInfoGUID  = ParseGUID("ce1dbfb4-137e-4da6-87b0-3f59aa102cbc")
	StackWalkGUID = ParseGUID("def2fe46-7bd6-4b80-bd94-f57fe20d0ce3")
	// KernelTraceControlGUID is the provider of the ImageID and DbgID_RSDS
	// events xperf, WPR and PerfView add when they merge a trace.
	KernelTraceControlGUID = ParseGUID("b3e675d7-2554-4f18-830b-2762732560de")
	// LostEventGUID is the provider of a real-time session's lost-event
	// reports (RT_LostEvent). Not EventTraceGUID's opcodes 32 and up,
	// which are EndExtension and other logger events.
	LostEventGUID = ParseGUID("6a399ae0-4bc6-4de9-870b-3657f8947e7e")
	// SysConfigExGUID is the provider of the system configuration
	// events a merged trace carries, among them how NT device paths map to
	// drive letters.
	SysConfigExGUID = ParseGUID("9b79ee91-b5fd-41c0-a243-4248e266e9d0")
	// The .NET runtime's providers, for naming JIT-compiled code.
	CLRGUID        = ParseGUID("e13c0d23-ccbc-4e12-931b-d9cc2eee27e4")
	CLRRundownGUID = ParseGUID("a669021c-c450-4609-a035-5af59af4df18")
)

// Kind is what an event is, independent of how it was keyed.
type Kind uint8

const (
	KindOther Kind = iota
	KindHeader
	KindSample          // PerfInfo SampledProfile
	KindSampleInterval  // PerfInfo interval set / collection start
	KindStack           // StackWalk with frames
	KindStackKeyKernel  // StackWalk reference to a cached kernel stack
	KindStackKeyUser    // StackWalk reference to a cached user stack
	KindStackKeyDef     // StackWalk definition of a cached stack
	KindProcessStart    // Process Start
	KindProcessEnd      // Process End
	KindProcessRundown  // Process DCStart / DCEnd
	KindThreadStart     // Thread Start
	KindThreadEnd       // Thread End
	KindThreadRundown   // Thread DCStart / DCEnd
	KindThreadName      // Thread SetName
	KindImageLoad       // Image Load
	KindImageUnload     // Image UnLoad
	KindImageRundown    // Image DCStart / DCEnd
	KindImageID         // KernelTraceControl ImageID
	KindDbgIDRSDS       // KernelTraceControl DbgID_RSDS
	KindCLRMethodLoad   // CLR MethodLoadVerbose, MethodDCStart/EndVerbose
	KindCLRMethodUnload // CLR MethodUnloadVerbose
	KindVolumeMapping   // SysConfigEx VolumeMapping: NT path prefix to DOS path
	KindLost            // RT_LostEvent RTLostEvent, RTLostBuffer, RTLostFile
)

// KindOf classifies e.
func KindOf(e *Event) Kind {
	if e.Classic() {
		if e.HookID == 0 {
			return KindHeader
		}
		return classicKind(e.Group(), e.Type())
	}
	switch e.Provider {
	case ProcessGUID:
		return classicKind(GroupProcess, e.Opcode)
	case ThreadGUID:
		return classicKind(GroupThread, e.Opcode)
	case ImageGUID:
		if e.Opcode == 10 {
			return KindImageLoad
		}
		return classicKind(GroupImage, e.Opcode)
	case PerfInfoGUID:
		return classicKind(GroupPerfInfo, e.Opcode)
	case StackWalkGUID:
		return classicKind(GroupStackWalk, e.Opcode)
	case KernelTraceControlGUID:
		switch e.Opcode {
		case 0:
			return KindImageID
		case 36:
			return KindDbgIDRSDS
		}
	case LostEventGUID:
		if e.Opcode >= 32 && e.Opcode <= 34 {
			return KindLost
		}
	case SysConfigExGUID:
		if e.Opcode == 35 {
			return KindVolumeMapping
		}
	case CLRGUID:
		switch e.ID {
		case 143: // MethodLoadVerbose
			return KindCLRMethodLoad
		case 144: // MethodUnloadVerbose
			return KindCLRMethodUnload
		}
	case CLRRundownGUID:
		if e.ID == 143 || e.ID == 144 { // MethodDCStartVerbose, MethodDCEndVerbose
			return KindCLRMethodLoad
		}
	}
	return KindOther
}

func classicKind(group, typ uint8) Kind {
	switch group {
	case GroupProcess:
		switch typ {
		case 1:
			return KindProcessStart
		case 2:
			return KindProcessEnd
		case 3, 4:
			return KindProcessRundown
		case 10:
			return KindImageLoad
		}
	case GroupThread:
		switch typ {
		case 1:
			return KindThreadStart
		case 2:
			return KindThreadEnd
		case 3, 4:
			return KindThreadRundown
		case 72:
			return KindThreadName
		}
	case GroupImage:
		switch typ {
		case 10:
			return KindImageLoad
		case 2:
			return KindImageUnload
		case 3, 4:
			return KindImageRundown
		}
	case GroupPerfInfo:
		switch typ {
		case 46:
			return KindSample
		case 72, 73, 74:
			return KindSampleInterval
		}
	case GroupStackWalk:
		switch typ {
		case 32:
			return KindStack
		case 35, 36:
			return KindStackKeyDef
		case 37:
			return KindStackKeyKernel
		case 38:
			return KindStackKeyUser
		}
	}
	return KindOther
}

// Sample is a PerfInfo SampledProfile payload.
type Sample struct {
	IP    uint64
	TID   uint32
	Count uint16
}

// DecodeSample decodes a SampledProfile payload.
func DecodeSample(p []byte, ptr64 bool) (s Sample, ok bool) {
	r := reader{b: p, ptr64: ptr64}
	s.IP = r.ptr()
	s.TID = r.u32()
	s.Count = r.u16()
	return s, !r.bad
}

// DecodeSampleInterval decodes a PerfInfo interval payload (Source,
// NewInterval, OldInterval) and returns the new interval in 100 ns units.
func DecodeSampleInterval(p []byte) (interval uint32, ok bool) {
	r := reader{b: p}
	r.u32()
	interval = r.u32()
	return interval, !r.bad && interval > 0
}

// Stack is a StackWalk event: the frames of the stack of the event (a
// sample) that happened at SampleTime on thread TID, leaf first. A stack
// key reference has Key set and no Frames.
type Stack struct {
	SampleTime int64
	PID, TID   uint32
	Frames     []uint64
	Key        uint64
}

// DecodeStack decodes a StackWalk Stack (32) payload.
func DecodeStack(p []byte, ptr64 bool) (s Stack, ok bool) {
	r := reader{b: p, ptr64: ptr64}
	s.SampleTime = int64(r.u64())
	s.PID = r.u32()
	s.TID = r.u32()
	if r.bad {
		return s, false
	}
	s.Frames = frames(p[r.off:], ptr64)
	return s, true
}

// DecodeStackKeyRef decodes a StackWalk kernel or user stack key
// reference (37, 38).
func DecodeStackKeyRef(p []byte, ptr64 bool) (s Stack, ok bool) {
	r := reader{b: p, ptr64: ptr64}
	s.SampleTime = int64(r.u64())
	s.PID = r.u32()
	s.TID = r.u32()
	s.Key = r.ptr()
	return s, !r.bad
}

// DecodeStackKeyDef decodes a cached stack's definition or rundown (35,
// 36): its key and frames, leaf first.
func DecodeStackKeyDef(p []byte, ptr64 bool) (key uint64, fr []uint64, ok bool) {
	r := reader{b: p, ptr64: ptr64}
	key = r.ptr()
	if r.bad {
		return 0, nil, false
	}
	return key, frames(p[r.off:], ptr64), true
}

func frames(b []byte, ptr64 bool) []uint64 {
	n := 4
	if ptr64 {
		n = 8
	}
	out := make([]uint64, 0, len(b)/n)
	for i := 0; i+n <= len(b); i += n {
		if ptr64 {
			out = append(out, binary.LittleEndian.Uint64(b[i:]))
		} else {
			out = append(out, uint64(binary.LittleEndian.Uint32(b[i:])))
		}
	}
	return out
}

// Process is a Process Start/End/DCStart/DCEnd payload (version 3 and
// later).
type Process struct {
	PID, ParentPID uint32
	SessionID      uint32
	ExitStatus     int32
	ImageName      string // e.g. "Test.x86.exe"
	CommandLine    string
}

// DecodeProcess decodes a Process payload of version 3 (Vista, 7) or later
// (which add a Flags field before the SID).
func DecodeProcess(p []byte, ptr64 bool, version uint8) (pr Process, ok bool) {
	r := reader{b: p, ptr64: ptr64}
	r.ptr() // UniqueProcessKey
	pr.PID = r.u32()
	pr.ParentPID = r.u32()
	pr.SessionID = r.u32()
	pr.ExitStatus = int32(r.u32())
	r.ptr() // DirectoryTableBase
	if version >= 4 {
		r.u32() // Flags
	}
	if r.bad {
		return pr, false
	}
	// UserSID: a TOKEN_USER (pointer and attributes, pointer-aligned)
	// followed by the SID, or 4 zero bytes when there is none.
	if r.off+4 <= len(p) && binary.LittleEndian.Uint32(p[r.off:]) == 0 {
		r.skip(4)
	} else {
		tu := 8
		if ptr64 {
			tu = 16
		}
		r.skip(tu)
		if r.off+2 > len(p) {
			return pr, false
		}
		subs := int(p[r.off+1])
		r.skip(8 + 4*subs)
	}
	pr.ImageName = r.ansi()
	pr.CommandLine = r.utf16()
	return pr, !r.bad
}

// Thread is a Thread Start/End/DCStart/DCEnd payload's identity.
type Thread struct {
	PID, TID uint32
	// Name is the thread's description, which version 4 of the event
	// (Windows 10 1709 and later) carries.
	Name string
}

// DecodeThread decodes a Thread Start/End/DCStart/DCEnd payload of the
// given version: its PID and TID, and from version 4 on its name.
func DecodeThread(p []byte, ptr64 bool, version uint8) (t Thread, ok bool) {
	r := reader{b: p, ptr64: ptr64}
	t.PID = r.u32()
	t.TID = r.u32()
	if r.bad {
		return t, false
	}
	if version >= 4 {
		// StackBase, StackLimit, UserStackBase, UserStackLimit,
		// Affinity, Win32StartAddr, TebBase; SubProcessTag; four
		// priority and flag bytes.
		for i := 0; i < 7; i++ {
			r.ptr()
		}
		r.u32()
		r.u32()
		if !r.bad {
			t.Name = r.utf16()
		}
	}
	return t, true
}

// DecodeThreadName decodes a Thread SetName payload.
func DecodeThreadName(p []byte) (t Thread, name string, ok bool) {
	r := reader{b: p}
	t.PID = r.u32()
	t.TID = r.u32()
	if r.bad {
		return t, "", false
	}
	return t, r.utf16(), true
}

// Image is an Image Load/UnLoad/DCStart/DCEnd payload.
type Image struct {
	Base, Size    uint64
	PID           uint32
	Checksum      uint32
	TimeDateStamp uint32
	DefaultBase   uint64
	FileName      string // as the kernel names it: \Device\HarddiskVolume2\..., \SystemRoot\...
}

// DecodeImage decodes an Image payload (version 2 and later).
func DecodeImage(p []byte, ptr64 bool) (im Image, ok bool) {
	r := reader{b: p, ptr64: ptr64}
	im.Base = r.ptr()
	im.Size = r.ptr()
	im.PID = r.u32()
	im.Checksum = r.u32()
	im.TimeDateStamp = r.u32()
	r.u32() // Reserved0
	im.DefaultBase = r.ptr()
	r.skip(16) // Reserved1..4
	if r.bad {
		return im, false
	}
	im.FileName = r.utf16()
	return im, true
}

// ImageID is a KernelTraceControl ImageID payload: the identity of the
// image whose Image event follows.
type ImageID struct {
	Base, Size    uint64
	PID           uint32
	TimeDateStamp uint32
	OriginalName  string
}

// DecodeImageID decodes a KernelTraceControl ImageID payload.
func DecodeImageID(p []byte, ptr64 bool) (id ImageID, ok bool) {
	r := reader{b: p, ptr64: ptr64}
	id.Base = r.ptr()
	id.Size = r.ptr()
	id.PID = r.u32()
	id.TimeDateStamp = r.u32()
	if r.bad {
		return id, false
	}
	id.OriginalName = r.utf16()
	return id, true
}

// RSDS is a KernelTraceControl DbgID_RSDS payload: the CodeView record of
// the image whose Image event follows.
type RSDS struct {
	Base    uint64
	PID     uint32
	GUID    GUID
	Age     uint32
	PDBPath string
}

// DecodeRSDS decodes a KernelTraceControl DbgID_RSDS payload.
func DecodeRSDS(p []byte, ptr64 bool) (d RSDS, ok bool) {
	r := reader{b: p, ptr64: ptr64}
	d.Base = r.ptr()
	d.PID = r.u32()
	d.GUID = r.guid()
	d.Age = r.u32()
	if r.bad {
		return d, false
	}
	d.PDBPath = r.ansi()
	return d, true
}

// MethodLoad is a CLR MethodLoadVerbose (or rundown) payload: a JIT-
// compiled method's code range and name.
type MethodLoad struct {
	MethodID, ModuleID uint64
	Start              uint64
	Size               uint32
	Namespace, Name    string
	Signature          string
}

// DecodeMethodLoad decodes a CLR MethodLoadVerbose payload (its fields are
// 8 bytes whatever the process's pointer size).
func DecodeMethodLoad(p []byte) (m MethodLoad, ok bool) {
	r := reader{b: p}
	m.MethodID = r.u64()
	m.ModuleID = r.u64()
	m.Start = r.u64()
	m.Size = r.u32()
	r.u32() // MethodToken
	r.u32() // MethodFlags
	if r.bad {
		return m, false
	}
	m.Namespace = r.utf16()
	m.Name = r.utf16()
	m.Signature = r.utf16()
	return m, true
}

// FullName joins a method's namespace (its type) and name as .NET tools
// print them.
func (m *MethodLoad) FullName() string {
	if m.Namespace == "" {
		return m.Name
	}
	return m.Namespace + "::" + m.Name
}

// DecodeVolumeMapping decodes a SysConfigEx VolumeMapping payload: an NT
// path prefix (\Device\HarddiskVolume2\) and the DOS path it is (C:\).
func DecodeVolumeMapping(p []byte) (nt, dos string, ok bool) {
	r := reader{b: p}
	nt = r.utf16()
	dos = r.utf16()
	return nt, dos, nt != ""
}

// NormalizePath turns a kernel path into one a user recognizes:
// \SystemRoot\ becomes C:\Windows\ and \??\ is dropped. \Device\... paths
// stay as they are: which drive letter a volume had is not in the event.
func NormalizePath(p string) string {
	switch {
	case hasPrefixFold(p, `\SystemRoot\`):
		return `C:\Windows\` + p[len(`\SystemRoot\`):]
	case strings.HasPrefix(p, `\??\`):
		return p[4:]
	}
	return p
}

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

// BaseName returns the last element of a Windows or Unix path.
func BaseName(p string) string {
	if i := strings.LastIndexAny(p, `\/`); i >= 0 {
		return p[i+1:]
	}
	return p
}
