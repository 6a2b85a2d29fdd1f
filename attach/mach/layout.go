package mach

// The byte layouts of the Mach structures the macOS backend reads, decoded
// here without build tags so that tests on any OS check them against real
// data. Offsets are from Apple's headers (mach/thread_status.h,
// mach/arm/_structs.h, mach/i386/_structs.h, mach/thread_info.h,
// mach/task_info.h, mach-o/dyld_images.h) for 64-bit processes; a count is
// the size in 32-bit words, the unit thread_info and friends take.

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/gprof-dev/gprof/attach/internal/suspendwalk"
	"github.com/gprof-dev/gprof/event"
)

var le = binary.LittleEndian

// Flavors and their counts.
const (
	x86ThreadState64      = 4 // x86_THREAD_STATE64
	x86ThreadState64Count = 42
	armThreadState64      = 6 // ARM_THREAD_STATE64
	armThreadState64Count = 68

	threadBasicInfo           = 3 // THREAD_BASIC_INFO
	threadBasicInfoCount      = 10
	threadIdentifierInfo      = 4 // THREAD_IDENTIFIER_INFO
	threadIdentifierInfoCount = 6
	threadExtendedInfo        = 5 // THREAD_EXTENDED_INFO
	threadExtendedInfoCount   = 28

	taskDyldInfo      = 17 // TASK_DYLD_INFO
	taskDyldInfoCount = 5  // packed: u64, u64, i32

	thRunRunning = 1 // TH_STATE_RUNNING
	thFlagsIdle  = 2 // TH_FLAGS_IDLE
)

// stateFlavor is the thread_get_state flavor and count for a.
func stateFlavor(a suspendwalk.Arch) (flavor, count uint32) {
	if a == suspendwalk.AMD64 {
		return x86ThreadState64, x86ThreadState64Count
	}
	return armThreadState64, armThreadState64Count
}

// decodeThreadState picks the registers a frame-pointer walk needs out of
// a thread_get_state buffer of a's flavor.
//
// arm_thread_state64: x[29], fp, lr, sp, pc (u64 each), cpsr, flags (u32).
// On arm64e the fp, lr, sp and pc fields may carry pointer-authentication
// bits; they are stripped here.
//
// x86_thread_state64: rax rbx rcx rdx rdi rsi rbp rsp r8-r15 rip rflags cs
// fs gs, 21 u64.
func decodeThreadState(a suspendwalk.Arch, b []byte) (event.Regs, error) {
	_, words := stateFlavor(a)
	if len(b) < int(words)*4 {
		return event.Regs{}, fmt.Errorf("%v thread state: %d bytes, want %d", a, len(b), words*4)
	}
	if a == suspendwalk.AMD64 {
		return event.Regs{
			BX: le.Uint64(b[1*8:]),
			FP: le.Uint64(b[6*8:]),
			SP: le.Uint64(b[7*8:]),
			IP: le.Uint64(b[16*8:]),
		}, nil
	}
	return event.Regs{
		FP: suspendwalk.StripPAC(le.Uint64(b[29*8:])),
		LR: suspendwalk.StripPAC(le.Uint64(b[30*8:])),
		SP: suspendwalk.StripPAC(le.Uint64(b[31*8:])),
		IP: suspendwalk.StripPAC(le.Uint64(b[32*8:])),
	}, nil
}

// threadBasic is what the sampler uses of thread_basic_info.
type threadBasic struct {
	CPU          int64 // user+system time in ns
	Running      bool
	Idle         bool
	SuspendCount int32
}

// decodeThreadBasicInfo decodes thread_basic_info: user_time and
// system_time as {i32 seconds, i32 microseconds}, then cpu_usage, policy,
// run_state, flags, suspend_count, sleep_time (i32 each).
func decodeThreadBasicInfo(b []byte) (threadBasic, error) {
	if len(b) < threadBasicInfoCount*4 {
		return threadBasic{}, fmt.Errorf("thread_basic_info: %d bytes, want %d", len(b), threadBasicInfoCount*4)
	}
	i32 := func(i int) int64 { return int64(int32(le.Uint32(b[i*4:]))) }
	cpu := (i32(0)+i32(2))*1e9 + (i32(1)+i32(3))*1e3
	return threadBasic{
		CPU:          cpu,
		Running:      i32(6) == thRunRunning,
		Idle:         i32(7)&thFlagsIdle != 0,
		SuspendCount: int32(i32(8)),
	}, nil
}

// decodeThreadID decodes thread_identifier_info's first field, the
// system-wide unique thread ID (the one Activity Monitor, sample(1) and
// pthread_threadid_np show).
func decodeThreadID(b []byte) (uint64, error) {
	if len(b) < threadIdentifierInfoCount*4 {
		return 0, fmt.Errorf("thread_identifier_info: %d bytes, want %d", len(b), threadIdentifierInfoCount*4)
	}
	return le.Uint64(b), nil
}

// decodeThreadName decodes the pth_name of thread_extended_info: after
// pth_user_time, pth_system_time (u64) and eight i32 fields, 64 bytes of
// NUL-terminated name.
func decodeThreadName(b []byte) (string, error) {
	if len(b) < threadExtendedInfoCount*4 {
		return "", fmt.Errorf("thread_extended_info: %d bytes, want %d", len(b), threadExtendedInfoCount*4)
	}
	return machCString(b[48 : 48+64]), nil
}

func machCString(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}

// decodeTaskDyldInfo decodes task_dyld_info (packed to 4 bytes):
// all_image_info_addr, all_image_info_size (u64), all_image_info_format
// (i32, 1 for a 64-bit process).
func decodeTaskDyldInfo(b []byte) (addr, size uint64, format int32, err error) {
	if len(b) < taskDyldInfoCount*4 {
		return 0, 0, 0, fmt.Errorf("task_dyld_info: %d bytes, want %d", len(b), taskDyldInfoCount*4)
	}
	return le.Uint64(b), le.Uint64(b[8:]), int32(le.Uint32(b[16:])), nil
}

// dyldAllImageInfos is what the sampler uses of dyld_all_image_infos.
type dyldAllImageInfos struct {
	Version    uint32
	Count      uint32
	InfoArray  uint64 // 0 while dyld is changing the list
	DyldHeader uint64 // dyld's own image, not in the list
	DyldPath   uint64 // char* (version 15 and later)
	// Timestamp changes whenever the list does (version 15 and later).
	Timestamp       uint64
	SharedCacheBase uint64
}

// Offsets in the 64-bit dyld_all_image_infos.
const (
	aiiInfoArray       = 8
	aiiDyldHeader      = 32
	aiiSharedCacheBase = 176
	aiiTimestamp       = 184
	aiiDyldPath        = 192
	aiiMinSize         = 16  // version, count, infoArray
	aiiV15Size         = 200 // through dyldPath
	dyldImageInfoSize  = 24  // load address, path, mod date
)

// decodeAllImageInfos decodes the head of a 64-bit dyld_all_image_infos.
// Fields a short buffer or an old version lacks are left zero.
func decodeAllImageInfos(b []byte) (dyldAllImageInfos, error) {
	if len(b) < aiiMinSize {
		return dyldAllImageInfos{}, fmt.Errorf("dyld_all_image_infos: %d bytes, want at least %d", len(b), aiiMinSize)
	}
	ai := dyldAllImageInfos{
		Version:   le.Uint32(b),
		Count:     le.Uint32(b[4:]),
		InfoArray: le.Uint64(b[aiiInfoArray:]),
	}
	if len(b) >= aiiDyldHeader+8 {
		ai.DyldHeader = le.Uint64(b[aiiDyldHeader:])
	}
	if ai.Version >= 15 && len(b) >= aiiV15Size {
		ai.SharedCacheBase = le.Uint64(b[aiiSharedCacheBase:])
		ai.Timestamp = le.Uint64(b[aiiTimestamp:])
		ai.DyldPath = le.Uint64(b[aiiDyldPath:])
	}
	return ai, nil
}

// dyldImage is one dyld_image_info: where a Mach-O header is loaded and a
// pointer to the path dyld loaded it by.
type dyldImage struct {
	Header, Path uint64
}

// decodeImageInfos decodes an array of 64-bit dyld_image_info.
func decodeImageInfos(b []byte, n int) ([]dyldImage, error) {
	if len(b) < n*dyldImageInfoSize {
		return nil, fmt.Errorf("dyld_image_info array: %d bytes for %d images", len(b), n)
	}
	out := make([]dyldImage, n)
	for i := range out {
		e := b[i*dyldImageInfoSize:]
		out[i] = dyldImage{Header: le.Uint64(e), Path: le.Uint64(e[8:])}
	}
	return out, nil
}

// errListChanging says dyld was changing its image list as it was read.
var errListChanging = errors.New("dyld is changing the image list")

// maxImages bounds an image list read from a target, against garbage.
const maxImages = 1 << 16
