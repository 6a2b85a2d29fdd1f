package perfrecord

// The record format's numbers, written once for gprof: from the kernel's
// include/uapi/linux/perf_event.h unless said otherwise. The live backend
// (attach/perf) asks for samples with these bits and the perf.data reader
// (record/perfdata) reads its files' attrs with them; both decode through
// this package.

// Record types (enum perf_event_type), the first word of a record's header.
const (
	RecordMmap          = 1
	RecordLost          = 2
	RecordComm          = 3
	RecordExit          = 4
	RecordThrottle      = 5
	RecordUnthrottle    = 6
	RecordFork          = 7
	RecordSample        = 9
	RecordMmap2         = 10
	RecordLostSamples   = 13
	RecordSwitch        = 14
	RecordSwitchCPUWide = 15
)

// Sample type bits (enum perf_event_sample_format): which fields a sample
// carries. The fields follow in the order of their bits, IDENTIFIER first.
// Fields past STACK_USER (weight, data source…) are not read: nothing
// gprof decodes comes after them.
const (
	SampleIP          = 1 << 0
	SampleTID         = 1 << 1
	SampleTime        = 1 << 2
	SampleAddr        = 1 << 3
	SampleRead        = 1 << 4
	SampleCallchain   = 1 << 5
	SampleID          = 1 << 6
	SampleCPU         = 1 << 7
	SamplePeriod      = 1 << 8
	SampleStreamID    = 1 << 9
	SampleRaw         = 1 << 10
	SampleBranchStack = 1 << 11
	SampleRegsUser    = 1 << 12
	SampleStackUser   = 1 << 13
	SampleIdentifier  = 1 << 16
)

// Read format bits (enum perf_event_read_format): the layout of a
// PERF_SAMPLE_READ value.
const (
	ReadTotalTimeEnabled = 1 << 0
	ReadTotalTimeRunning = 1 << 1
	ReadID               = 1 << 2
	ReadGroup            = 1 << 3
	ReadLost             = 1 << 4
)

// BranchHWIndex is PERF_SAMPLE_BRANCH_HW_INDEX of the attr's
// branch_sample_type: a branch stack then carries one more u64.
const BranchHWIndex = 1 << 17

// Header misc bits (PERF_RECORD_MISC_*). Bits 13 and 14 mean different
// things on different records.
const (
	MiscCPUModeMask = 7
	MiscKernel      = 1 // a CPU mode: the sample was taken in kernel mode
	MiscUser        = 2 // a CPU mode: in user mode

	MiscMmapData         = 1 << 13 // on MMAP, MMAP2: a data mapping
	MiscCommExec         = 1 << 13 // on COMM: renamed by exec
	MiscSwitchOut        = 1 << 13 // on SWITCH: the task left the CPU
	MiscMmapBuildID      = 1 << 14 // on MMAP2: a build-id instead of device and inode
	MiscSwitchOutPreempt = 1 << 14 // on SWITCH out: the task was still runnable
)

// Call chain context markers (enum perf_callchain_context), the top 4095
// values of u64: a marker says whose frames follow.
const (
	ContextHV          = ^uint64(0x20 - 1)  // -32
	ContextKernel      = ^uint64(0x80 - 1)  // -128
	ContextUser        = ^uint64(0x200 - 1) // -512
	ContextGuestKernel = ^uint64(0x880 - 1) // -2176
	ContextGuestUser   = ^uint64(0xa00 - 1) // -2560
	ContextMax         = ^uint64(0xfff - 1) // -4095: every marker is at least this
)

// RegsABINone is the register ABI of a sample whose user registers could
// not be taken (enum perf_sample_regs_abi): a kernel thread's, say.
const RegsABINone = 0

// Event types (enum perf_type_id) and the event ids (enum perf_sw_ids,
// enum perf_hw_id) gprof samples.
const (
	TypeHardware   = 0
	TypeSoftware   = 1
	TypeTracepoint = 2

	CountSWCPUClock        = 0
	CountSWTaskClock       = 1
	CountSWContextSwitches = 3
	CountSWDummy           = 9 // counts nothing: a leader for side-band records

	CountHWCPUCycles    = 0
	CountHWInstructions = 1
)

// Register numbers in a sample_regs_user mask: for x86-64 from
// arch/x86/include/uapi/asm/perf_regs.h, for arm64 from
// arch/arm64/include/uapi/asm/perf_regs.h.
const (
	RegX86BX  = 1
	RegX86BP  = 6
	RegX86SP  = 7
	RegX86IP  = 8
	RegX86R12 = 20 // R13, R14, R15 follow

	RegARM64X29 = 29 // the frame pointer
	RegARM64LR  = 30
	RegARM64SP  = 31
	RegARM64PC  = 32
)

// protExec is PROT_EXEC (include/uapi/asm-generic/mman-common.h) in an
// MMAP2 record's prot.
const protExec = 4
