package attach

import (
	"strings"
	"testing"
)

func TestParseEvents(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []EventSpec
	}{
		{"cpu-clock", []EventSpec{{Name: "cpu-clock", Kind: KindClock}}},
		{"faults,cs:u", []EventSpec{{Name: "page-faults", Kind: KindSoftware, Config: 2}, {Name: "context-switches", Kind: KindSoftware, Config: 3, User: true}}},
		{"cpu-clock/period=250000/,page-faults/freq=99/:k", []EventSpec{
			{Name: "cpu-clock", Kind: KindClock, Period: 250000},
			{Name: "page-faults", Kind: KindSoftware, Config: 2, Freq: 99, Kernel: true}}},
		{"sched:sched_switch", []EventSpec{{Name: "sched:sched_switch", Kind: KindTracepoint}}},
		{"syscalls:sys_enter_openat:u", []EventSpec{{Name: "syscalls:sys_enter_openat", Kind: KindTracepoint, User: true}}},
		{"probe:do_sys_openat2__return", []EventSpec{{Name: "probe:do_sys_openat2__return", Kind: KindKprobe, Symbol: "do_sys_openat2", Return: true}}},
		{"probe_libc:malloc", []EventSpec{{Name: "probe_libc:malloc", Kind: KindUprobe, Binary: "libc", Symbol: "malloc"}}},
		{"sdt_myapp:tick", []EventSpec{{Name: "sdt_myapp:tick", Kind: KindUSDT, Symbol: "myapp:tick"}}},
		{"cycles,instructions", []EventSpec{{Name: "cycles", Kind: KindHardware}, {Name: "instructions", Kind: KindHardware, Config: 1}}},
	} {
		got, err := ParseEvents(c.in)
		if err != nil {
			t.Errorf("%q: %v", c.in, err)
			continue
		}
		if len(got) != len(c.want) {
			t.Errorf("%q: %+v", c.in, got)
			continue
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Errorf("%q: event %d = %+v, want %+v", c.in, i, got[i], c.want[i])
			}
		}
	}
	for in, mention := range map[string]string{
		"page-fault":              "did you mean page-faults",
		"cpu-clock/period=0/":     "period=N",
		"cpu-clock/weight=3/":     "unknown term",
		"cpu-clock/period=3":      "no closing /",
		"cpu-clock:x":             "unknown modifier",
		"faults,faults":           "twice",
		"":                        "no event",
		"a b:c":                   "SYSTEM:NAME",
		"page-faults/period=1/zz": "neither a modifier",
	} {
		_, err := ParseEvents(in)
		if err == nil || !strings.Contains(err.Error(), mention) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: error %v, want one line saying %q", in, err, mention)
		}
	}
}

func TestParseProbe(t *testing.T) {
	for in, want := range map[string]EventSpec{
		"do_sys_openat2":         {Name: "probe:do_sys_openat2", Kind: KindKprobe, Symbol: "do_sys_openat2"},
		"vfs_read+16%return":     {Name: "probe:vfs_read_16__return", Kind: KindKprobe, Symbol: "vfs_read", Offset: 16, Return: true},
		"/lib/libc.so.6:malloc":  {Name: "probe_libc:malloc", Kind: KindUprobe, Binary: "/lib/libc.so.6", Symbol: "malloc"},
		"./app:parse%return":     {Name: "probe_app:parse__return", Kind: KindUprobe, Binary: "./app", Symbol: "parse", Return: true},
		"./app:sdt_myapp:tick":   {Name: "sdt_myapp:tick", Kind: KindUSDT, Binary: "./app", Symbol: "myapp:tick"},
		"./app:%myapp:tick":      {Name: "sdt_myapp:tick", Kind: KindUSDT, Binary: "./app", Symbol: "myapp:tick"},
		"app:_ZN3foo3barEv@plt2": {Name: "probe_app:_ZN3foo3barEv_plt2", Kind: KindUprobe, Binary: "app", Symbol: "_ZN3foo3barEv@plt2"},
	} {
		got, err := ParseProbe(in)
		if err != nil || got != want {
			t.Errorf("%q: %+v %v, want %+v", in, got, err, want)
		}
	}
	for _, in := range []string{"", ":f", "app:", "f+x", "app:sdt_:x"} {
		if _, err := ParseProbe(in); err == nil || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: error %v, want one line", in, err)
		}
	}
}

func FuzzParseEvents(f *testing.F) {
	for _, s := range []string{"cpu-clock", "faults/period=1/:u,sched:sched_switch", "probe_libc:malloc__return", "sdt_a:b", "x/freq=9/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		evs, err := ParseEvents(s)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("multi-line error %q", err)
			}
			return
		}
		for _, e := range evs {
			if e.Name == "" || e.Period > 0 && e.Freq > 0 {
				t.Fatalf("%q: %+v", s, e)
			}
		}
		ParseProbe(s)
	})
}
