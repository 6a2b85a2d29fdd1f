package perfdata

import (
	"bytes"
	"strings"
	"testing"

	"github.com/gprof-dev/gprof/event"
)

// trace.data is 'perf record -B -e syscalls:sys_enter_openat,page-faults
// -c 1 --switch-events -- events opens 100' (perf 6.1; testdata/events.c):
// two events, the first a tracepoint whose format is in the file's tracing
// data, and context switches.
func TestParseTracepoints(t *testing.T) {
	f, err := Parse(readSeed(t, "trace.data"))
	if err != nil {
		t.Fatal(err)
	}
	attrs := f.SampledAttrs()
	if len(attrs) != 2 || attrs[0].Name != "syscalls:sys_enter_openat" || attrs[1].Name != "page-faults" {
		t.Fatalf("sampled events %v", f.EventNames())
	}
	if attrs[0].Trace == nil || len(attrs[0].Trace.Fields) != 5 {
		t.Fatalf("the tracepoint's format %+v", attrs[0].Trace)
	}
	opens, switches, withFields := 0, 0, 0
	for _, e := range f.Events {
		switch e := e.(type) {
		case *event.Sample:
			if e.Event == 0 {
				opens++
				if strings.Contains(string(e.Fields), "filename=0x") {
					withFields++
				}
			}
		case *event.Switch:
			switches++
		}
	}
	// 100 opens by the program, 2 by the loader (perf script counts 102).
	if opens != 102 || withFields != opens {
		t.Errorf("%d openat samples, %d with fields; want 102", opens, withFields)
	}
	if switches == 0 {
		t.Error("no context switches")
	}
	p := f.Profile(Options{})
	if p.Meta.Extra["event"] != "syscalls:sys_enter_openat" || p.Meta.Extra["events"] != "syscalls:sys_enter_openat,page-faults" {
		t.Errorf("events %q %q", p.Meta.Extra["event"], p.Meta.Extra["events"])
	}
	par := false
	for _, pr := range p.Processes {
		for _, c := range pr.Counters {
			par = par || c.Name == "Parallelism"
		}
	}
	if !par {
		t.Error("no parallelism counter from the context switches")
	}
}

// tracingSeed is the tracing data of trace.data.
func tracingSeed(t testing.TB) []byte {
	b := readSeed(t, "trace.data")
	i := bytes.Index(b, tracingMagic)
	if i < 0 {
		t.Fatal("trace.data has no tracing data")
	}
	return b[i:]
}

func TestParseTracingData(t *testing.T) {
	m, err := ParseTracingData(tracingSeed(t))
	if err != nil {
		t.Fatal(err)
	}
	if f := m[782]; f == nil || f.Name != "syscalls:sys_enter_openat" {
		t.Errorf("formats %v", m)
	}
	for _, cut := range []int{0, 5, 20, 100} {
		if _, err := ParseTracingData(tracingSeed(t)[:cut]); err == nil || strings.Contains(err.Error(), "\n") {
			t.Errorf("cut at %d: %v", cut, err)
		}
	}
}

func FuzzParseTracingData(f *testing.F) {
	f.Add(tracingSeed(f))
	f.Fuzz(func(t *testing.T, b []byte) {
		if _, err := ParseTracingData(b); err != nil && strings.Contains(err.Error(), "\n") {
			t.Fatalf("multi-line error %q", err)
		}
	})
}
