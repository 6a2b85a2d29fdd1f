package etw

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"strings"
	"time"
	"unicode/utf16"

	"github.com/gprof-dev/gprof/etwevent"
)

// The platform-neutral parts of starting an ETW session, tested on Linux;
// live_windows.go passes what they build to advapi32.

// etwSessionPrefix starts the name of every session gprof starts, so a run
// can find and stop the one a killed earlier run left behind.
const etwSessionPrefix = "gprof-kernel-"

// etwSessionName is this run's private session name: a system logger
// session of its own, so WPR's or xperf's "NT Kernel Logger" is left alone.
func etwSessionName(pid int) string { return fmt.Sprintf("%s%d", etwSessionPrefix, pid) }

// isStaleETWSession reports whether name is a session a gprof run other
// than the one with pid self started.
func isStaleETWSession(name string, self int) bool {
	return strings.HasPrefix(name, etwSessionPrefix) && name != etwSessionName(self)
}

// The profile interval Windows accepts, in 100 ns units: 1221 (122.1 µs,
// about 8 kHz) to 1,000,000 (100 ms).
const (
	etwMinInterval = 1221
	etwMaxInterval = 1_000_000
)

// etwInterval converts the asked interval to the 100 ns units
// TraceSetInformation takes, clamped to what Windows allows, with a notice
// when it had to change it.
func etwInterval(d time.Duration) (units uint32, notice string) {
	u := int64(d / 100)
	switch {
	case d <= 0:
		return 10000, "" // not given: Windows' default, 1 ms
	case u < etwMinInterval:
		return etwMinInterval, fmt.Sprintf("Windows samples at most every 122.1µs (8.19 kHz); using that instead of %v", d)
	case u > etwMaxInterval:
		return etwMaxInterval, fmt.Sprintf("Windows samples at least every 100ms; using that instead of %v", d)
	}
	return uint32(u), ""
}

// Kernel session flags and modes (evntrace.h).
const (
	etwFlagProcess  = 0x00000001
	etwFlagThread   = 0x00000002
	etwFlagImage    = 0x00000004
	etwFlagProfile  = 0x01000000
	etwRealTimeMode = 0x00000100
	etwSystemLogger = 0x02000000
	wnodeTracedGUID = 0x00020000
)

// systemTraceControlGUID is the NT Kernel Logger's. A private system
// logger session must not use it (Microsoft's "Configuring and Starting a
// SystemTraceProvider Session"): it gets a GUID of its own.
var systemTraceControlGUID = etwevent.ParseGUID("9e814aad-3204-11d2-9a82-006008a86939")

// newSessionGUID returns a random (version 4) GUID for a session.
func newSessionGUID() etwevent.GUID {
	var g etwevent.GUID
	rand.Read(g[:])
	g[7] = g[7]&0x0f | 0x40 // version 4, in Data3's high nibble
	g[8] = g[8]&0x3f | 0x80 // variant
	return g
}

// etwPropsSize is sizeof(EVENT_TRACE_PROPERTIES) on 64-bit Windows (amd64,
// arm64, the targets gprof builds for): WNODE_HEADER (48) and 72 bytes of
// fields, LoggerThreadId being an 8-byte HANDLE at 104.
const etwPropsSize = 120

// etwProperties builds EVENT_TRACE_PROPERTIES followed by the session name
// (and room for the log file name, which ControlTrace may fill) for a
// private real-time kernel session, identified by guid, with process,
// thread, image and profile events, for cpus processors.
func etwProperties(name string, guid etwevent.GUID, cpus int) []byte {
	n := utf16.Encode([]rune(name))
	nameBytes := 2 * (len(n) + 1)
	const logRoom = 2 * 1024 // LogFileName buffer ControlTrace may fill
	size := etwPropsSize + nameBytes + logRoom
	b := make([]byte, size)
	le := binary.LittleEndian
	// WNODE_HEADER
	le.PutUint32(b[0:], uint32(size)) // BufferSize
	copy(b[24:40], guid[:])
	le.PutUint32(b[40:], 1) // ClientContext: QPC timestamps
	le.PutUint32(b[44:], wnodeTracedGUID)
	// EVENT_TRACE_PROPERTIES
	le.PutUint32(b[48:], 1024) // BufferSize in KB
	minBuf := uint32(2*cpus + 4)
	le.PutUint32(b[52:], minBuf)                                                   // MinimumBuffers
	le.PutUint32(b[56:], minBuf+32)                                                // MaximumBuffers
	le.PutUint32(b[64:], etwRealTimeMode|etwSystemLogger)                          // LogFileMode
	le.PutUint32(b[68:], 1)                                                        // FlushTimer, seconds
	le.PutUint32(b[72:], etwFlagProcess|etwFlagThread|etwFlagImage|etwFlagProfile) // EnableFlags
	le.PutUint32(b[112:], uint32(etwPropsSize+nameBytes))                          // LogFileNameOffset
	le.PutUint32(b[116:], etwPropsSize)                                            // LoggerNameOffset
	for i, c := range n {
		le.PutUint16(b[etwPropsSize+2*i:], c)
	}
	return b
}
