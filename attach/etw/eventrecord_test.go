package etw

import (
	"bytes"
	"os"
	"testing"
	"unsafe"

	"github.com/gprof-dev/gprof/etwevent"
)

// TestETWLayouts checks the 64-bit offsets evntcons.h and evntrace.h give
// EVENT_RECORD's and EVENT_TRACE_LOGFILEW's fields.
func TestETWLayouts(t *testing.T) {
	if unsafe.Sizeof(uintptr(0)) != 8 {
		t.Skip("the layouts are Windows' 64-bit ones")
	}
	var r eventRecord
	var l eventTraceLogfile
	for _, c := range []struct {
		name      string
		got, want uintptr
	}{
		{"EVENT_RECORD size", unsafe.Sizeof(r), 112},
		{"ProviderId", unsafe.Offsetof(r.ProviderID), 24},
		{"EventDescriptor.Opcode", unsafe.Offsetof(r.Opcode), 45},
		{"ProcessorTime", unsafe.Offsetof(r.ProcessorTime), 56},
		{"BufferContext", unsafe.Offsetof(r.ProcessorNumber), 80},
		{"UserDataLength", unsafe.Offsetof(r.UserDataLength), 86},
		{"UserData", unsafe.Offsetof(r.UserData), 96},
		{"EVENT_TRACE_LOGFILEW size", unsafe.Sizeof(l), 448},
		{"ProcessTraceMode", unsafe.Offsetof(l.ProcessTraceMode), 28},
		{"LogfileHeader", unsafe.Offsetof(l.LogfileHeader), 120},
		{"BufferCallback", unsafe.Offsetof(l.BufferCallback), 400},
		{"EventRecordCallback", unsafe.Offsetof(l.EventRecordCallback), 424},
		{"Context", unsafe.Offsetof(l.Context), 440},
	} {
		if c.got != c.want {
			t.Errorf("%s at %d, want %d", c.name, c.got, c.want)
		}
	}
}

// classicGUIDs are the providers a real-time session keys the classic
// kernel groups by.
var classicGUIDs = map[uint8]etwevent.GUID{
	etwevent.GroupProcess:   etwevent.ProcessGUID,
	etwevent.GroupThread:    etwevent.ThreadGUID,
	etwevent.GroupImage:     etwevent.ImageGUID,
	etwevent.GroupPerfInfo:  etwevent.PerfInfoGUID,
	etwevent.GroupStackWalk: etwevent.StackWalkGUID,
}

// TestETWEventFromRecord turns the cut trace's classic kernel events into
// the EVENT_RECORDs a real-time session delivers for them and checks that
// etwEvent gives back events KindOf and the decoders read the same.
func TestETWEventFromRecord(t *testing.T) {
	data, err := os.ReadFile("../../etwevent/testdata/cut.etl")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	err = etwevent.WalkETL(bytes.NewReader(data), func(e *etwevent.Event, cpu, _ int) {
		g, ok := classicGUIDs[e.Group()]
		if !e.Classic() || !ok || e.Group() == etwevent.GroupProcess && e.Type() == 10 {
			return
		}
		r := eventRecord{ProviderID: g, Opcode: e.Type(), Version: e.Version, TimeStamp: e.Time,
			ThreadID: uint32(e.TID), ProcessID: uint32(e.PID), ProcessorNumber: uint8(cpu), Alignment: uint8(cpu >> 8),
			Flags: eventHeaderFlag32Bit}
		if e.Ptr64 {
			r.Flags = eventHeaderFlag64Bit
		}
		got, gcpu := etwEvent(&r, e.Payload, false)
		if etwevent.KindOf(&got) != etwevent.KindOf(e) || gcpu != cpu || got.Ptr64 != e.Ptr64 || got.Time != e.Time {
			t.Fatalf("%v: kind %v cpu %d, want %v cpu %d", g, etwevent.KindOf(&got), gcpu, etwevent.KindOf(e), cpu)
		}
		if etwevent.KindOf(e) == etwevent.KindSample {
			a, _ := etwevent.DecodeSample(e.Payload, e.Ptr64)
			b, _ := etwevent.DecodeSample(got.Payload, got.Ptr64)
			if a != b {
				t.Fatalf("sample %+v, want %+v", b, a)
			}
		}
		n++
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 500 {
		t.Fatalf("only %d events checked", n)
	}
}
