package python

import (
	"encoding/binary"
	"errors"
)

// layout is where one CPython version keeps what a stack walk needs, as
// byte offsets for 64-bit builds; -1 marks a field the version lacks.
type layout struct {
	minor int // 3.minor

	// _PyRuntime
	interpHead int64 // interpreters.head
	// PyInterpreterState
	interpNext  int64 // next
	threadsHead int64 // tstate_head (3.8-3.10), threads.head (3.11+)
	// PyThreadState
	tsNext     int64
	tsFrame    int64 // frame (3.8-3.10) or current_frame (3.13+)
	tsCFrame   int64 // cframe (3.11, 3.12), whose current_frame is at cfCurrent
	cfCurrent  int64
	tsThreadID int64 // pthread_t
	tsNativeID int64 // the kernel's thread id (3.11+)
	// PyFrameObject (3.8-3.10) or _PyInterpreterFrame (3.11+)
	frBack    int64 // f_back or previous
	frCode    int64 // f_code or f_executable
	frLasti   int64 // f_lasti (3.8-3.10)
	frInstr   int64 // prev_instr (3.11, 3.12) or instr_ptr (3.13+)
	frOwner   int64 // owner (3.11+)
	frIsEntry int64 // is_entry (3.11)
	// PyCodeObject
	coFilename, coName, coQualname int64
	coFirstLine                    int64 // an int
	coLineTable                    int64 // co_lnotab (3.8, 3.9) or co_linetable: a bytes object
	coCode                         int64 // co_code, a bytes object (3.8-3.10)
	coCodeAdaptive                 int64 // where the instructions start (3.11+)
	// PyASCIIObject and PyCompactUnicodeObject sizes: where a compact
	// string's characters start.
	asciiSize, compactSize int64
}

// frameOwnedByCStack is _PyInterpreterFrame.owner of the frame that
// _PyEval_EvalFrameDefault puts under the frames it runs (3.12+).
const frameOwnedByCStack = 3

// layouts holds 3.8 to 3.12; 3.13 and later describe themselves.
var layouts = map[int]*layout{
	8: {minor: 8, interpHead: 32, threadsHead: 8, tsNext: 8, tsFrame: 24, tsCFrame: -1, cfCurrent: -1,
		tsThreadID: 176, tsNativeID: -1, frBack: 24, frCode: 32, frLasti: 104, frInstr: -1, frOwner: -1, frIsEntry: -1,
		coFilename: 104, coName: 112, coQualname: -1, coFirstLine: 40, coLineTable: 120, coCode: 48, coCodeAdaptive: -1,
		asciiSize: 48, compactSize: 72},
	10: {minor: 10, interpHead: 32, threadsHead: 8, tsNext: 8, tsFrame: 24, tsCFrame: -1, cfCurrent: -1,
		tsThreadID: 176, tsNativeID: -1, frBack: 24, frCode: 32, frLasti: 96, frInstr: -1, frOwner: -1, frIsEntry: -1,
		coFilename: 104, coName: 112, coQualname: -1, coFirstLine: 40, coLineTable: 120, coCode: 48, coCodeAdaptive: -1,
		asciiSize: 48, compactSize: 72},
	11: {minor: 11, interpHead: 40, threadsHead: 16, tsNext: 8, tsFrame: -1, tsCFrame: 56, cfCurrent: 8,
		tsThreadID: 152, tsNativeID: 160, frBack: 48, frCode: 32, frLasti: -1, frInstr: 56, frOwner: 69, frIsEntry: 68,
		coFilename: 112, coName: 120, coQualname: 128, coFirstLine: 72, coLineTable: 136, coCode: -1, coCodeAdaptive: 184,
		asciiSize: 48, compactSize: 72},
	12: {minor: 12, interpHead: 40, threadsHead: 72, tsNext: 8, tsFrame: -1, tsCFrame: 56, cfCurrent: 0,
		tsThreadID: 136, tsNativeID: 144, frBack: 8, frCode: 0, frLasti: -1, frInstr: 56, frOwner: 70, frIsEntry: -1,
		coFilename: 112, coName: 120, coQualname: 128, coFirstLine: 68, coLineTable: 136, coCode: -1, coCodeAdaptive: 192,
		asciiSize: 40, compactSize: 56},
}

func init() {
	// 3.9 has 3.8's layout for all of the above.
	l9 := *layouts[8]
	l9.minor = 9
	layouts[9] = &l9
}

// debugOffsetsSize is how much of _Py_DebugOffsets is read: up to the end
// of its unicode_object part (3.13).
const debugOffsetsSize = 568

// errNoDebugOffsets says _PyRuntime does not start with _Py_DebugOffsets.
var errNoDebugOffsets = errors.New("no _Py_DebugOffsets in _PyRuntime")

// fromDebugOffsets builds the layout of a 3.13+ interpreter from the
// _Py_DebugOffsets at the start of its _PyRuntime (Include/internal/
// pycore_runtime.h): each part starts with its structure's size, then
// field offsets in a fixed order.
func fromDebugOffsets(b []byte) (*layout, error) {
	if len(b) < debugOffsetsSize || string(b[:8]) != "xdebugpy" {
		return nil, errNoDebugOffsets
	}
	at := func(off int) int64 { return int64(binary.LittleEndian.Uint64(b[off:])) }
	version := binary.LittleEndian.Uint64(b[8:])
	if version>>24 != 3 || (version>>16)&0xff < 13 {
		return nil, errNoDebugOffsets
	}
	if at(16) != 0 {
		return nil, errors.New("free-threaded CPython builds are not supported")
	}
	l := &layout{
		minor:      int(version>>16) & 0xff,
		interpHead: at(40),
		// interpreter_state: size, id, next, threads_head
		interpNext: at(64), threadsHead: at(72),
		// thread_state: size, prev, next, interp, current_frame,
		// thread_id, native_thread_id
		tsNext: at(168), tsFrame: at(184), tsCFrame: -1, cfCurrent: -1,
		tsThreadID: at(192), tsNativeID: at(200),
		// interpreter_frame: size, previous, executable, instr_ptr,
		// localsplus, owner
		frBack: at(232), frCode: at(240), frLasti: -1, frInstr: at(248), frOwner: at(264), frIsEntry: -1,
		// code_object: size, filename, name, qualname, linetable,
		// firstlineno, argcount, localsplusnames, localspluskinds,
		// co_code_adaptive
		coFilename: at(280), coName: at(288), coQualname: at(296), coLineTable: at(304),
		coFirstLine: at(312), coCode: -1, coCodeAdaptive: at(344),
		// unicode_object: size, state, length, asciiobject_size
		asciiSize: at(560),
	}
	// A PyCompactUnicodeObject adds utf8_length and utf8 to the
	// PyASCIIObject.
	l.compactSize = l.asciiSize + 16
	for _, v := range []int64{l.interpHead, l.interpNext, l.threadsHead, l.tsNext, l.tsFrame, l.tsNativeID, l.frBack, l.frCode,
		l.frInstr, l.frOwner, l.coFilename, l.coName, l.coQualname, l.coLineTable, l.coFirstLine, l.coCodeAdaptive, l.asciiSize} {
		if v < 0 || v > 1<<16 {
			return nil, errors.New("_Py_DebugOffsets out of range")
		}
	}
	return l, nil
}

// tstateSpan is how many bytes of a PyThreadState a walk reads.
func (l *layout) tstateSpan() int {
	return int(max(l.tsNext, l.tsFrame, l.tsCFrame, l.tsThreadID, l.tsNativeID) + 8)
}

// frameSpan is how many bytes of a frame a walk reads.
func (l *layout) frameSpan() int {
	return int(max(l.frBack, l.frCode, l.frLasti, l.frInstr, l.frIsEntry, l.frOwner) + 8)
}

// codeSpan is how many bytes of a code object's header a walk reads.
func (l *layout) codeSpan() int {
	return int(max(l.coFilename, l.coName, l.coQualname, l.coFirstLine, l.coLineTable, l.coCode) + 8)
}
