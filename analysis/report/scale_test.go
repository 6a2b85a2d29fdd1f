package report

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gprof-dev/gprof/profile"
)

// TestOneRowPerFunction: a function whose lines come from two files (as
// CPython's _PyEval_EvalFrameDefault's come from bytecodes.c and the
// generated_cases.c.h it includes) is one function, in the lists and the
// tree, with its hottest line's file and line.
func TestOneRowPerFunction(t *testing.T) {
	p := testProfile()
	p.Symbols.Add(appKey, 0x500, []profile.SymbolFrame{{Function: "eval", File: "bytecodes.c", Line: 10}})
	p.Symbols.Add(appKey, 0x600, []profile.SymbolFrame{{Function: "eval", File: "generated_cases.c.h", Line: 20}})
	th := p.Processes[0].Threads[1]
	fr := func(rel uint64) profile.Frame {
		return profile.Frame{Address: libStart + rel, Category: profile.CategoryUser}
	}
	for i := 0; i < 4; i++ {
		rel := uint64(0x500)
		if i == 3 {
			rel = 0x600
		}
		th.Samples.Add(th.InternStack([]profile.Frame{fr(rel)}), 20e6+int64(i), -1)
	}
	r := Build(p, Options{Top: -1})
	var rows []Function
	for _, f := range byTid(t, r, 11).TopSelf {
		if f.Name == "eval" {
			rows = append(rows, f)
		}
	}
	if len(rows) != 1 || rows[0].Self != 4 || rows[0].File != "bytecodes.c" || rows[0].Line != 10 {
		t.Errorf("eval rows %+v, want one with 4 samples at bytecodes.c:10", rows)
	}
	var buf bytes.Buffer
	if err := WriteCollapsed(&buf, BuildTree(p)); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "worker;eval 4\n") {
		t.Errorf("collapsed:\n%s\nwant worker;eval 4", buf.String())
	}
}

// TestNoInline: folding inlined code into the function it was compiled
// into gives inl's self time to outer, at outer's line there (the call).
func TestNoInline(t *testing.T) {
	a := byTid(t, Build(testProfile(), Options{NoInline: true}), 10)
	if got := names(a.TopSelf); got != "hot,outer,rec" {
		t.Errorf("self order %s, want hot,outer,rec", got)
	}
	for _, f := range a.TopSelf {
		if f.Name == "outer" && (f.Self != 3 || f.Line != 3 || f.File != "a.c") {
			t.Errorf("outer %+v, want 3 samples at a.c:3", f)
		}
	}
	var buf bytes.Buffer
	if err := WriteCollapsed(&buf, BuildTreeOptions(testProfile(), Options{NoInline: true})); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "app;main;outer 3\n") || strings.Contains(buf.String(), "inl") {
		t.Errorf("collapsed:\n%s", buf.String())
	}
}

// scaleProfile has a shell that exec'd python through a shim (one OS
// process, three images), two sort processes, nproc busy threads and
// three threads that were never sampled.
func scaleProfile(nproc int) *profile.Profile {
	p := &profile.Profile{Meta: profile.Meta{Interval: time.Millisecond, Duration: 1e9}, Symbols: &profile.SymbolTable{}}
	add := func(pid int, name string, exec bool, tid int, samples int) {
		var pr *profile.Process
		if n := len(p.Processes); n > 0 && !exec && p.Processes[n-1].Pid == pid && p.Processes[n-1].Name == name {
			pr = p.Processes[n-1]
		} else {
			pr = &profile.Process{Pid: pid, Name: name, Exec: exec, End: -1}
			p.Processes = append(p.Processes, pr)
		}
		th := &profile.Thread{Tid: tid, Main: tid == pid, End: -1}
		for i := 0; i < samples; i++ {
			th.Samples.Add(th.InternStack([]profile.Frame{{Label: name + "_work"}}), int64(i), 1e6)
		}
		pr.Threads = append(pr.Threads, th)
	}
	add(100, "bash", false, 100, 2)
	add(100, "bash", true, 100, 0)
	add(100, "python3.12", true, 100, 50)
	add(200, "sort", false, 200, 30)
	add(201, "sort", false, 201, 20)
	for i := 0; i < nproc; i++ {
		add(300+i, fmt.Sprintf("cc%d", i), false, 300+i, 10-i%5)
	}
	add(900, "idle", false, 900, 0)
	add(900, "idle", false, 901, 0)
	add(902, "idle2", false, 902, 0)
	return p
}

// TestReportAtScale: the whole profile comes first, the busiest threads
// and processes follow up to the limit, threads without samples get no
// section, one line says what was left out, and an exec chain is one
// thread named after its programs.
func TestReportAtScale(t *testing.T) {
	r := Build(scaleProfile(15), Options{})
	// JSON lists each program's thread apart, as recorded, with the chain.
	var images []string
	for _, th := range r.Threads {
		if th.Pid == 100 {
			images = append(images, fmt.Sprintf("%s:%d", th.ProcessName, th.Samples))
			if strings.Join(th.Programs, ",") != "bash,python3.12" {
				t.Errorf("pid 100 thread %+v: programs %q", th, th.Programs)
			}
		}
	}
	if strings.Join(images, " ") != "python3.12:50 bash:2 bash:0" {
		t.Errorf("pid 100's threads in JSON: %q", images)
	}
	var exec *Thread
	for i := range r.folded {
		if r.folded[i].Pid == 100 {
			if exec != nil {
				t.Fatalf("pid 100's thread is folded twice: %+v and %+v", *exec, r.folded[i])
			}
			exec = &r.folded[i]
		}
	}
	if exec == nil || exec.Samples != 52 || exec.ProcessName != "python3.12" || strings.Join(exec.Programs, ",") != "bash,python3.12" {
		t.Fatalf("exec chain thread %+v", exec)
	}

	var buf bytes.Buffer
	if err := WriteTextOptions(&buf, r, TextOptions{}); err != nil {
		t.Fatal(err)
	}
	text := buf.String()
	all, procs, first := strings.Index(text, "\nAll threads\n"), strings.Index(text, "\nProcesses\n"), strings.Index(text, "(tid ")
	if all < 0 || procs < all || first < procs {
		t.Errorf("want All threads, then Processes, then threads:\n%s", text)
	}
	if n := strings.Count(text, "(tid "); n != DefaultLimit {
		t.Errorf("%d thread sections, want %d:\n%s", n, DefaultLimit, text)
	}
	if strings.Count(text, "bash → python3.12 (pid 100)") != 1 || strings.Contains(text, "\n  0 samples") {
		t.Errorf("exec chain or empty sections:\n%s", text)
	}
	// 18 threads with samples: 10 shown, 8 not; 3 never sampled.
	if !strings.Contains(text, "Not shown: 8 more threads with ") || !strings.Contains(text, "3 threads without samples; --limit N or --all shows them") {
		t.Errorf("no line on what was left out:\n%s", text)
	}

	buf.Reset()
	WriteTextOptions(&buf, r, TextOptions{All: true})
	if n := strings.Count(buf.String(), "(tid "); n != len(r.folded) || strings.Contains(buf.String(), "Not shown") {
		t.Errorf("--all: %d sections of %d threads", n, len(r.folded))
	}
	buf.Reset()
	WriteTextOptions(&buf, r, TextOptions{Limit: 2})
	if n := strings.Count(buf.String(), "(tid "); n != 2 {
		t.Errorf("--limit 2: %d sections", n)
	}
}

// TestTreeKeepsProcessesApart: the two sorts of a pipeline are two roots,
// while threads of one name in one process stay merged.
func TestTreeKeepsProcessesApart(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteCollapsed(&buf, BuildTree(scaleProfile(1))); err != nil {
		t.Fatal(err)
	}
	got := buf.String()
	for _, want := range []string{"sort (pid 200);sort_work 30\n", "sort (pid 201);sort_work 20\n", "cc0;cc0_work 10\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("collapsed:\n%s\nwant %q", got, want)
		}
	}
}

// TestTextRoundsOnce: 170 of 1121 samples is 15.16503%, which perf report
// prints as 15.17; rounding the JSON's 15.1650 again printed 15.16.
func TestTextRoundsOnce(t *testing.T) {
	p := &profile.Profile{Meta: profile.Meta{Interval: time.Millisecond}}
	th := &profile.Thread{Tid: 1, Main: true, End: -1}
	for i := 0; i < 1121; i++ {
		name := "other"
		if i < 170 {
			name = "plain"
		}
		th.Samples.Add(th.InternStack([]profile.Frame{{Label: name}}), int64(i), 1e6)
	}
	p.Processes = []*profile.Process{{Pid: 1, Name: "inl", End: -1, Threads: []*profile.Thread{th}}}
	var buf bytes.Buffer
	if err := WriteText(&buf, Build(p, Options{})); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "15.17%  plain") {
		t.Errorf("text:\n%s\nwant plain at 15.17%%", buf.String())
	}
}
