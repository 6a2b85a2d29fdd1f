package etw

import (
	"unsafe"

	"github.com/gprof-dev/gprof/etwevent"
)

// The structures a real-time ETW consumer shares with advapi32, in their
// 64-bit layouts (evntcons.h, evntrace.h). They are declared here, outside
// the Windows build, so their offsets are tested on any 64-bit host.

// eventRecord is EVENT_RECORD: EVENT_HEADER (80 bytes), ETW_BUFFER_CONTEXT
// and the extended and user data.
type eventRecord struct {
	Size, HeaderType, Flags, EventProperty uint16
	ThreadID, ProcessID                    uint32
	TimeStamp                              int64
	ProviderID                             etwevent.GUID
	// EVENT_DESCRIPTOR
	ID                              uint16
	Version, Channel, Level, Opcode uint8
	Task                            uint16
	Keyword                         uint64
	ProcessorTime                   uint64
	ActivityID                      etwevent.GUID
	// ETW_BUFFER_CONTEXT: ProcessorNumber and Alignment are also the
	// 16-bit ProcessorIndex.
	ProcessorNumber, Alignment        uint8
	LoggerID                          uint16
	ExtendedDataCount, UserDataLength uint16
	ExtendedData                      unsafe.Pointer
	UserData                          unsafe.Pointer
	UserContext                       unsafe.Pointer
}

// EVENT_HEADER_FLAG_64_BIT_HEADER and _32_BIT_HEADER.
const (
	eventHeaderFlag32Bit = 0x0020
	eventHeaderFlag64Bit = 0x0040
)

// etwEvent fills an etwevent.Event from a real-time EVENT_RECORD and its
// user data, the way the doc of package github.com/gprof-dev/gprof/etw
// says: the provider GUID and opcode key the event (KindOf maps the kernel
// providers' GUIDs to the classic groups), the header flags give the
// pointer size. payload must stay valid while the event is decoded; the
// decoders copy what they keep. The processor is returned apart, as the
// ETL reader gives it.
func etwEvent(r *eventRecord, payload []byte, hostPtr64 bool) (e etwevent.Event, cpu int) {
	e = etwevent.Event{
		HeaderType: etwevent.HeaderEventHeader64,
		Provider:   r.ProviderID,
		Opcode:     r.Opcode,
		ID:         r.ID,
		Version:    r.Version,
		PID:        int64(r.ProcessID),
		TID:        int64(r.ThreadID),
		Time:       r.TimeStamp,
		Payload:    payload,
	}
	switch {
	case r.Flags&eventHeaderFlag64Bit != 0:
		e.Ptr64 = true
	case r.Flags&eventHeaderFlag32Bit != 0:
		e.Ptr64, e.HeaderType = false, etwevent.HeaderEventHeader32
	default:
		e.Ptr64 = hostPtr64
	}
	return e, int(r.ProcessorNumber) | int(r.Alignment)<<8
}

// eventTraceLogfile is EVENT_TRACE_LOGFILEW, what OpenTraceW takes.
type eventTraceLogfile struct {
	LogFileName      *uint16
	LoggerName       *uint16
	CurrentTime      int64
	BuffersRead      uint32
	ProcessTraceMode uint32
	CurrentEvent     [88]byte  // EVENT_TRACE
	LogfileHeader    [280]byte // TRACE_LOGFILE_HEADER
	BufferCallback   uintptr
	BufferSize       uint32
	Filled           uint32
	EventsLost       uint32
	// EventRecordCallback is the union with EventCallback; with
	// PROCESS_TRACE_MODE_EVENT_RECORD it gets EVENT_RECORDs.
	EventRecordCallback uintptr
	IsKernelTrace       uint32
	Context             uintptr
}

// ProcessTraceMode bits.
const (
	processTraceModeRealTime     = 0x00000100
	processTraceModeRawTimestamp = 0x00001000
	processTraceModeEventRecord  = 0x10000000
)
