package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/gprof-dev/gprof/profile"
)

const libStart = 0x10000

var appKey = profile.LibKey{DebugName: "app", BreakpadID: "A1"}

// testProfile has two threads. The main thread's self time splits 50/30/20
// between hot, inl (inlined into outer) and rec (which recurses); the
// other thread has only unsymbolicated frames and no CPU data.
func testProfile() *profile.Profile {
	st := &profile.SymbolTable{}
	st.Add(appKey, 0x100, []profile.SymbolFrame{{Function: "outer", File: "a.c", Line: 3}, {Function: "inl", File: "b.h", Line: 7}})
	st.Add(appKey, 0x200, []profile.SymbolFrame{{Function: "hot", File: "h.c", Line: 11}})
	st.Add(appKey, 0x300, []profile.SymbolFrame{{Function: "main", File: "m.c", Line: 5}})
	st.Add(appKey, 0x400, []profile.SymbolFrame{{Function: "rec", File: "r.c", Line: 2}})
	// The recursive call site is stored under the nudged key, as some
	// symbolizers do.
	st.Add(appKey, 0x40f, []profile.SymbolFrame{{Function: "rec", File: "r.c", Line: 4}})

	u := profile.CategoryUser
	fr := func(rel uint64) profile.Frame { return profile.Frame{Address: libStart + rel, Category: u} }
	a := &profile.Thread{Tid: 10, Name: "app", Main: true, End: -1}
	for i := 0; i < 10; i++ {
		var s int32
		switch {
		case i < 5:
			s = a.InternStack([]profile.Frame{fr(0x200), fr(0x300)})
		case i < 8:
			s = a.InternStack([]profile.Frame{fr(0x100), fr(0x300)})
		default:
			s = a.InternStack([]profile.Frame{fr(0x400), fr(0x410), fr(0x410), fr(0x300)})
		}
		a.Samples.Add(s, int64(i)*1e6, 1e6)
	}
	b := &profile.Thread{Tid: 11, Name: "worker", End: -1}
	for i := 0; i < 10; i++ {
		var s int32
		switch {
		case i < 4:
			s = b.InternStack([]profile.Frame{fr(0x900)})
		case i < 8:
			s = b.InternStack([]profile.Frame{{Address: 0x5, Category: u}})
		default:
			s = b.InternStack([]profile.Frame{{Label: "idle"}})
		}
		b.Samples.Add(s, int64(i)*1e6, -1)
	}
	return &profile.Profile{
		Meta: profile.Meta{Product: "gprof", Interval: 2 * time.Millisecond, Duration: 10e6},
		Processes: []*profile.Process{{Pid: 10, Name: "app", End: -1, Threads: []*profile.Thread{a, b},
			Libs: []profile.Lib{{Start: libStart, End: libStart + 0x10000, Name: "app", DebugName: "app", BreakpadID: "A1"}}}},
		Symbols: st,
	}
}

func names(fs []Function) string {
	var s []string
	for _, f := range fs {
		s = append(s, f.Name)
	}
	return strings.Join(s, ",")
}

func TestBuild(t *testing.T) {
	r := Build(testProfile(), Options{})
	if r.Samples != 20 || len(r.Threads) != 2 || r.Version != Version {
		t.Fatalf("report %+v", r)
	}
	a := byTid(t, r, 10)
	if a.Samples != 10 || a.CPU != 10e6 || a.CPUEstimated || a.PctOfAll != 50 {
		t.Errorf("thread a: %+v", a)
	}
	if got := names(a.TopSelf); got != "hot,inl,rec" {
		t.Errorf("self order %s", got)
	}
	want := []struct {
		self, selfAll float64
		file          string
		line          int
	}{{50, 25, "h.c", 11}, {30, 15, "b.h", 7}, {20, 10, "r.c", 2}}
	for i, w := range want {
		f := a.TopSelf[i]
		if f.SelfPct != w.self || f.SelfPctAll != w.selfAll || f.File != w.file || f.Line != w.line || f.Lib != "app" {
			t.Errorf("self %d: %+v, want %v", i, f, w)
		}
	}
	// main is on every stack; rec recurses but counts once per sample;
	// outer holds inl, so it gets inl's samples as total, none as self.
	if got := names(a.TopTotal); got != "main,hot,inl,outer,rec" {
		t.Errorf("total order %s", got)
	}
	tot := map[string]float64{}
	for _, f := range a.TopTotal {
		tot[f.Name] = f.TotalPct
	}
	if tot["main"] != 100 || tot["hot"] != 50 || tot["inl"] != 30 || tot["outer"] != 30 || tot["rec"] != 20 {
		t.Errorf("totals %v", tot)
	}
	// main's line comes from the caller lookup, rec's from its self line.
	for _, f := range a.TopTotal {
		if f.Name == "main" && f.Line != 5 || f.Name == "outer" && f.Line != 3 {
			t.Errorf("%s line %d", f.Name, f.Line)
		}
	}

	b := byTid(t, r, 11)
	if b.CPU != 20e6 || !b.CPUEstimated {
		t.Errorf("thread b cpu %d estimated %v", b.CPU, b.CPUEstimated)
	}
	// Ties order by name: "0x5" < "app+0x900".
	if got := names(b.TopSelf); got != "0x5,app+0x900,idle" {
		t.Errorf("fallback names %s", got)
	}
	if b.TopSelf[1].Lib != "app" || b.TopSelf[0].Lib != "" || b.TopSelf[0].SelfPct != 40 {
		t.Errorf("fallbacks %+v", b.TopSelf)
	}

	if got := names(r.All.TopSelf); got != "hot,0x5,app+0x900,inl,idle,rec" {
		t.Errorf("all self %s", got)
	}
	if r.All.TopSelf[0].SelfPct != 25 || r.All.TopSelf[0].SelfPctAll != 25 || r.CPU != 30e6 || !r.CPUEstimated {
		t.Errorf("all %+v cpu %d", r.All.TopSelf[0], r.CPU)
	}

	if r := Build(testProfile(), Options{Top: 2}); len(byTid(t, r, 10).TopSelf) != 2 || len(r.All.TopTotal) != 2 {
		t.Errorf("Top not applied")
	}
}

func TestBuildKernel(t *testing.T) {
	// Kernel frames outside every lib resolve through the "kernel" symbol
	// table by absolute address; a caller may be stored nudged.
	const k1, k2 = 0xffffffff81000100, 0xffffffff81000200
	p := testProfile()
	p.Symbols.Add(profile.LibKey{DebugName: "kernel"}, k1, []profile.SymbolFrame{{Function: "clear_page"}})
	p.Symbols.Add(profile.LibKey{DebugName: "kernel"}, k2-1, []profile.SymbolFrame{{Function: "do_fault"}})
	th := p.Processes[0].Threads[1]
	kf := func(a uint64) profile.Frame { return profile.Frame{Address: a, Category: profile.CategoryKernel} }
	th.Samples.Add(th.InternStack([]profile.Frame{kf(k1), kf(k2), kf(0xffffffff81000300)}), 11e6, -1)
	r := Build(p, Options{Top: -1})
	got := map[string]string{}
	for _, f := range byTid(t, r, 11).TopTotal {
		got[f.Name] = f.Lib
	}
	if got["clear_page"] != "kernel" || got["do_fault"] != "kernel" || got["0xffffffff81000300"] != "kernel" {
		t.Errorf("kernel functions %v", got)
	}
}

func TestBuildEmpty(t *testing.T) {
	r := Build(&profile.Profile{}, Options{})
	var buf bytes.Buffer
	if err := WriteText(&buf, r); err != nil {
		t.Fatal(err)
	}
	if err := WriteJSON(&buf, r); err != nil {
		t.Fatal(err)
	}
	p := testProfile()
	p.Symbols = nil
	p.Processes[0].Threads[0].Samples = profile.SampleTable{}
	r = Build(p, Options{})
	if a := byTid(t, r, 10); a.Samples != 0 || len(a.TopSelf) != 0 {
		t.Errorf("%+v", a)
	}
}

func TestWriteJSONSchema(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteJSON(&buf, Build(testProfile(), Options{Top: 1})); err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(buf.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	keys := func(m map[string]any) string {
		var k []string
		for key := range m {
			k = append(k, key)
		}
		return strings.Join(sortStrings(k), ",")
	}
	if got := keys(m); got != "all,by,cpu_estimated,cpu_ns,duration_ns,interval_ns,lost_events,off_cpu,process_totals,processes,product,samples,threads,version" {
		t.Errorf("top-level keys %s", got)
	}
	th := m["threads"].([]any)[0].(map[string]any)
	if got := keys(th); got != "cpu_estimated,cpu_ns,main,pct_of_all,pid,process_name,samples,thread_name,tid,top_self,top_total" {
		t.Errorf("thread keys %s", got)
	}
	fn := th["top_self"].([]any)[0].(map[string]any)
	if got := keys(fn); got != "file,lib,line,name,self_cpu_ns,self_pct,self_pct_all,self_samples,total_cpu_ns,total_pct,total_pct_all,total_samples" {
		t.Errorf("function keys %s", got)
	}
	if m["version"].(float64) != 1 || fn["self_pct"].(float64) != 50 {
		t.Errorf("values %v %v", m["version"], fn["self_pct"])
	}
}

func sortStrings(s []string) []string {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
	return s
}

const wantText = `20 samples in 2 threads of 1 process, CPU 30.00 ms (partly estimated from the interval), interval 2.00 ms, duration 10.00 ms

All threads
  20 samples, CPU 30.00 ms (partly estimated from the interval)

  Top by self CPU time
    samples       all  function  location
          5    25.00%  hot       h.c:11 [app]
          4    20.00%  0x5

  Top by total CPU time
    samples       all  function  location
         10    50.00%  main      m.c:5 [app]
          5    25.00%  hot       h.c:11 [app]

app (pid 10) / app (tid 10), main thread
  10 samples (50.00% of all), CPU 10.00 ms

  Top by self CPU time
    samples    thread       all  function  location
          5    50.00%    25.00%  hot       h.c:11 [app]
          3    30.00%    15.00%  inl       b.h:7 [app]

  Top by total CPU time
    samples    thread       all  function  location
         10   100.00%    50.00%  main      m.c:5 [app]
          5    50.00%    25.00%  hot       h.c:11 [app]

app (pid 10) / worker (tid 11)
  10 samples (50.00% of all), CPU 20.00 ms (partly estimated from the interval)

  Top by self CPU time
    samples    thread       all  function   location
          4    40.00%    20.00%  0x5
          4    40.00%    20.00%  app+0x900  [app]

  Top by total CPU time
    samples    thread       all  function   location
          4    40.00%    20.00%  0x5
          4    40.00%    20.00%  app+0x900  [app]
`

func TestWriteText(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteText(&buf, Build(testProfile(), Options{Top: 2})); err != nil {
		t.Fatal(err)
	}
	if got := buf.String(); got != wantText {
		t.Errorf("text:\n%s\nwant:\n%s", got, wantText)
	}
	if strings.Contains(buf.String(), "\x1b") {
		t.Error("color codes in plain text")
	}
	buf.Reset()
	WriteTextColor(&buf, Build(testProfile(), Options{Top: 2}))
	if !strings.Contains(buf.String(), "\x1b[1m") {
		t.Error("no color codes when asked")
	}
}

func byTid(t *testing.T, r Report, tid int) Thread {
	t.Helper()
	for _, th := range r.Threads {
		if th.Tid == tid {
			return th
		}
	}
	t.Fatalf("no thread %d in the report", tid)
	return Thread{}
}

// A recording that could not sample kernel mode says how much CPU time
// had no stack; the report repeats it.
func TestNoStackCPU(t *testing.T) {
	p := testProfile()
	p.Meta.Extra = map[string]string{"no_stack_cpu_ms": "417.2", "no_stack_reason": "kernel mode, not sampled at kernel.perf_event_paranoid=2"}
	r := Build(p, Options{Top: 1})
	if r.NoStackCPU != 417200000 {
		t.Errorf("no-stack CPU %d ns, want 417.2 ms", r.NoStackCPU)
	}
	var buf bytes.Buffer
	if err := WriteText(&buf, r); err != nil {
		t.Fatal(err)
	}
	if want := "note: 417.20 ms of the CPU time had no stack (kernel mode, not sampled at kernel.perf_event_paranoid=2)"; !strings.Contains(buf.String(), want) {
		t.Errorf("text lacks %q:\n%s", want, buf.String())
	}
}

// TestWriteTextEscapesControlCharacters: names come from the profiled
// program (thread names, symbols, file paths) and must not drive the
// terminal: control characters are printed escaped, as Go quotes them.
func TestWriteTextEscapesControlCharacters(t *testing.T) {
	p := testProfile()
	evil := "\x1b[31mred"
	pr := p.Processes[0]
	pr.Name = evil
	pr.Threads[0].Name = "a\nb"
	pr.Threads[1].Name = "bell\a\u009b2J\u202egnp.exe"
	pr.Libs[0].Name = "lib\rx"
	p.Symbols.Add(appKey, 0x200, []profile.SymbolFrame{{Function: evil, File: "a\nb.c", Line: 11}})
	for _, color := range []bool{false, true} {
		var buf bytes.Buffer
		write := WriteText
		if color {
			write = WriteTextColor
		}
		if err := write(&buf, Build(p, Options{Top: 2})); err != nil {
			t.Fatal(err)
		}
		out := buf.String()
		plain := strings.NewReplacer("\x1b[1m", "", "\x1b[0m", "").Replace(out)
		for _, bad := range []string{"\x1b", "\a", "\r", "\u009b", "\u202e", "a\nb"} {
			if strings.Contains(plain, bad) {
				t.Errorf("color=%v: raw %q in output:\n%s", color, bad, out)
			}
		}
		for _, want := range []string{`\x1b[31mred (pid 10) / a\nb (tid 10)`, `bell\a\u009b2J\u202egnp.exe (tid 11)`, `\x1b[31mred`, `a\nb.c:11 [lib\rx]`} {
			if !strings.Contains(out, want) {
				t.Errorf("color=%v: output lacks %q:\n%s", color, want, out)
			}
		}
	}
}

func TestPrintable(t *testing.T) {
	for in, want := range map[string]string{
		"main":               "main",
		`C:\src\a.c`:         `C:\src\a.c`,
		"naïve::ψ<T>":        "naïve::ψ<T>",
		"\x1b[31mred":        `\x1b[31mred`,
		"a\nb\tc\x7f":        `a\nb\tc\x7f`,
		"bad\xffutf8":        `bad\xffutf8`,
		"\u202egnp.exe":      `\u202egnp.exe`,
		"replacement \ufffd": "replacement \ufffd",
	} {
		if got := printable(in); got != want {
			t.Errorf("printable(%q) = %q, want %q", in, got, want)
		}
	}
}

// offCPUProfile: a thread that computes in "work" 3 samples of 1 ms of
// CPU and blocks in "wait" for 7 samples of none.
func offCPUProfile() *profile.Profile {
	th := &profile.Thread{Tid: 1, Name: "t", Main: true, End: -1}
	work := th.InternStack([]profile.Frame{{Label: "work"}, {Label: "main"}})
	wait := th.InternStack([]profile.Frame{{Label: "[blocked]", Category: profile.CategoryIdle}, {Label: "wait"}, {Label: "main"}})
	for i := 0; i < 10; i++ {
		if i < 3 {
			th.Samples.Add(work, int64(i)*1e6, 1e6)
		} else {
			th.Samples.Add(wait, int64(i)*1e6, 0)
		}
	}
	return &profile.Profile{
		Meta:      profile.Meta{Interval: time.Millisecond, Categories: profile.OffCPUCategories},
		Processes: []*profile.Process{{Pid: 1, Name: "p", End: -1, Threads: []*profile.Thread{th}}},
	}
}

// --by wall ranks by samples, --by cpu by the CPU they carry; both
// figures are in every list, and the text shows them side by side.
func TestReportByWallAndCPU(t *testing.T) {
	p := offCPUProfile()
	wall := Build(p, Options{})
	if !wall.OffCPU || wall.By != ByWall {
		t.Errorf("off_cpu %v by %q", wall.OffCPU, wall.By)
	}
	if f := wall.All.TopTotal[2]; f.Name != "wait" || f.TotalPct != 70 || f.Total != 7 || f.TotalCPU != 0 {
		t.Errorf("by wall, second by total: %+v", f)
	}
	cpu := Build(p, Options{By: ByCPU})
	if f := cpu.All.TopSelf[0]; f.Name != "work" || f.SelfPct != 100 || f.SelfCPU != 3e6 || f.Self != 3 {
		t.Errorf("by cpu, first by self: %+v", f)
	}
	for _, f := range cpu.All.TopTotal {
		if f.Name == "wait" {
			t.Errorf("by cpu, wait is listed: %+v", f)
		}
	}
	var buf bytes.Buffer
	if err := WriteText(&buf, wall); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "Top by self wall-clock time\n    samples      CPU") ||
		!strings.Contains(buf.String(), "3  3.00 ms    30.00%") {
		t.Errorf("text by wall lacks the CPU column:\n%s", buf.String())
	}
}
