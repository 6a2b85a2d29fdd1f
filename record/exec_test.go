package record

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/gprof-dev/gprof/analysis/report"
	"github.com/gprof-dev/gprof/event"
	"github.com/gprof-dev/gprof/format/gecko"
	"github.com/gprof-dev/gprof/format/processed"
	"github.com/gprof-dev/gprof/profile"
)

// execProfile records what `sh -c 'perl; perl'` looks like to the builder:
// a shell forks two children that each run a little as sh, then exec perl;
// one perl starts a thread; the second child reuses no pid. Pid 12 also
// execs twice (a pyenv shim: bash, bash, python3).
func execProfile() *profile.Profile {
	b := newTestBuilder()
	b.handle(&event.Comm{Time: 1000 * ms, Pid: 10, Tid: 10, Name: "sh", Argv: []string{"sh"}})
	b.handle(mapEv(1000*ms, 10, 0x1000, 0x2000, "/bin/sh"))
	b.handle(sample(1001*ms, 10, 10, 0x1010))
	t := 1002 * ms
	for _, pid := range []int{11, 12} {
		b.handle(&event.Fork{Time: t, Pid: pid, Tid: pid, Ppid: 10, Ptid: 10})
		b.handle(sample(t+1, pid, pid, 0x1020))
		images := []string{"perl"}
		if pid == 12 {
			images = []string{"bash", "bash", "python3"}
		}
		for i, name := range images {
			t += 2 * ms
			b.handle(&event.Comm{Time: t, Pid: pid, Tid: pid, Name: name, Exec: true, Argv: []string{"/usr/bin/" + name}})
			b.handle(mapEv(t+1, pid, 0x4000+uint64(i)*0x1000, 0x5000+uint64(i)*0x1000, "/usr/bin/"+name))
			b.handle(sample(t+2, pid, pid, 0x4010+uint64(i)*0x1000))
		}
		if pid == 11 {
			b.handle(&event.Fork{Time: t + 3, Pid: 11, Tid: 21, Ppid: 11, Ptid: 11})
			b.handle(sample(t+4, 11, 21, 0x4020))
		}
		t += 2 * ms
		b.handle(&event.Exit{Time: t, Pid: pid, Tid: pid})
	}
	p := &profile.Profile{Meta: profile.Meta{Interval: time.Millisecond, Duration: 100 * ms}}
	for _, pr := range b.finish(t + ms) {
		p.Processes = append(p.Processes, pr.p)
	}
	return p
}

// outThread is what the Firefox Profiler keeps of a thread, in either
// format: the Gecko import turns pids into strings and makes a thread named
// GeckoMain the main thread of its process.
type outThread struct {
	Name, ProcessName, Pid, Tid string
	Main                        bool
}

func outThreads(t *testing.T, data []byte, kind string) []outThread {
	t.Helper()
	type rawThread struct {
		Name         string          `json:"name"`
		ProcessName  string          `json:"processName"`
		Pid          json.RawMessage `json:"pid"`
		Tid          json.RawMessage `json:"tid"`
		IsMainThread bool            `json:"isMainThread"`
	}
	id := func(raw json.RawMessage) string {
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			t.Fatalf("%s: id %s: %v", kind, raw, err)
		}
		return fmt.Sprint(v)
	}
	var out []outThread
	add := func(th rawThread, main bool) {
		out = append(out, outThread{Name: th.Name, ProcessName: th.ProcessName, Pid: id(th.Pid), Tid: id(th.Tid), Main: main})
	}
	if kind == "processed" {
		var p struct{ Threads []rawThread }
		if err := json.Unmarshal(data, &p); err != nil {
			t.Fatal(err)
		}
		for _, th := range p.Threads {
			add(th, th.IsMainThread)
		}
		return out
	}
	type geckoProcess struct {
		Threads   []rawThread
		Processes []json.RawMessage
	}
	var walk func(raw []byte)
	walk = func(raw []byte) {
		var p geckoProcess
		if err := json.Unmarshal(raw, &p); err != nil {
			t.Fatal(err)
		}
		for _, th := range p.Threads {
			add(th, th.Name == "GeckoMain")
		}
		for _, sub := range p.Processes {
			walk(sub)
		}
	}
	walk(data)
	return out
}

// checkTracks applies the front-end's rules: one process track per pid,
// held by that pid's main thread (a later main thread of the same pid
// replaces an earlier one, which is then left with no track), every other
// thread a local track; and no tid may repeat (assertProfileIntegrity).
func checkTracks(t *testing.T, kind string, threads []outThread) {
	t.Helper()
	tids := map[string]bool{}
	mainOf := map[string]int{}
	for i, th := range threads {
		if tids[th.Tid] {
			t.Errorf("%s: duplicate tid %s (pid %s, %s)", kind, th.Tid, th.Pid, th.Name)
		}
		tids[th.Tid] = true
		if th.Main {
			mainOf[th.Pid] = i
		}
	}
	for i, th := range threads {
		if th.Main && mainOf[th.Pid] != i {
			t.Errorf("%s: main thread %s (pid %s, tid %s) has no track", kind, th.Name, th.Pid, th.Tid)
		}
	}
}

// An exec must leave every thread its own track and no tid repeated, in
// both formats.
func TestExecThreadsAllGetTracks(t *testing.T) {
	p := execProfile()
	var gb, pb bytes.Buffer
	if err := gecko.Write(&gb, p); err != nil {
		t.Fatal(err)
	}
	if err := processed.Write(&pb, p); err != nil {
		t.Fatal(err)
	}
	g, pr := outThreads(t, gb.Bytes(), "gecko"), outThreads(t, pb.Bytes(), "processed")
	checkTracks(t, "gecko", g)
	checkTracks(t, "processed", pr)
	if len(g) != len(pr) {
		t.Fatalf("gecko has %d threads, processed %d", len(g), len(pr))
	}
	// Both formats must look the same to the front-end.
	for i := range g {
		if g[i] != pr[i] {
			t.Errorf("thread %d: gecko %+v, processed %+v", i, g[i], pr[i])
		}
	}
	pids := map[string]bool{}
	for _, th := range g {
		pids[th.Pid] = true
	}
	if len(pids) != 3 {
		t.Errorf("%d process tracks, want 3 (sh and its two children): %+v", len(pids), g)
	}

	// Every summary counts the three OS processes, also after reading
	// either file back.
	if n := p.ProcessCount(); n != 3 {
		t.Errorf("ProcessCount %d, want 3", n)
	}
	if n := report.Build(p, report.Options{}).Processes; n != 3 {
		t.Errorf("report counts %d processes, want 3", n)
	}
	gp, err := gecko.Read(bytes.NewReader(gb.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	pp, err := processed.Read(bytes.NewReader(pb.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	for name, q := range map[string]*profile.Profile{"gecko": gp, "processed": pp} {
		if n := report.Build(q, report.Options{}).Processes; n != 3 {
			t.Errorf("%s read back: report counts %d processes, want 3", name, n)
		}
	}
	if len(gp.Processes) != len(p.Processes) {
		t.Fatalf("gecko read back %d images, want %d", len(gp.Processes), len(p.Processes))
	}
	for i, pr := range gp.Processes {
		if pr.Pid != p.Processes[i].Pid || pr.Exec != p.Processes[i].Exec || pr.Name != p.Processes[i].Name {
			t.Errorf("gecko read back image %d: pid %d exec %v %q, want %d %v %q", i,
				pr.Pid, pr.Exec, pr.Name, p.Processes[i].Pid, p.Processes[i].Exec, p.Processes[i].Name)
		}
		for j, th := range pr.Threads {
			if want := p.Processes[i].Threads[j]; th.Tid != want.Tid || th.Main != want.Main || th.Name != want.Name {
				t.Errorf("gecko read back thread %d/%d: %d %v %q, want %d %v %q", i, j, th.Tid, th.Main, th.Name, want.Tid, want.Main, want.Name)
			}
		}
	}
}
