//go:build linux

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// frontEndThread is what the Firefox Profiler keeps of a thread to build
// its tracks: the Gecko import makes pids strings and takes the thread
// named GeckoMain as its process's main thread.
type frontEndThread struct {
	name, pid, tid string
	main           bool
}

func frontEndThreads(t *testing.T, path string) []frontEndThread {
	t.Helper()
	id := func(v any) string { return fmt.Sprint(v) }
	var out []frontEndThread
	raw := readRaw(t, path)
	if _, ok := raw["shared"]; ok { // processed
		for _, v := range raw["threads"].([]any) {
			th := v.(map[string]any)
			out = append(out, frontEndThread{th["name"].(string), id(th["pid"]), id(th["tid"]), th["isMainThread"] == true})
		}
		return out
	}
	var walk func(p map[string]any)
	walk = func(p map[string]any) {
		for _, v := range p["threads"].([]any) {
			th := v.(map[string]any)
			out = append(out, frontEndThread{th["name"].(string), id(th["pid"]), id(th["tid"]), th["name"] == "GeckoMain"})
		}
		for _, sub := range p["processes"].([]any) {
			walk(sub.(map[string]any))
		}
	}
	walk(raw)
	return out
}

// checkFrontEndTracks applies the front-end's track rules (one process
// track per pid, held by its main thread; a second main thread of the same
// pid takes the track and leaves the first with none) and its integrity
// check (no tid twice), and with the front-end's own code when its checker
// is at hand ($GPROF_ORACLE, by default /work/shared/tools/oracle/oracle).
func checkFrontEndTracks(t *testing.T, path string) {
	t.Helper()
	threads := frontEndThreads(t, path)
	tids := map[string]bool{}
	trackOf := map[string]int{}
	for i, th := range threads {
		if tids[th.tid] {
			t.Errorf("%s: tid %s twice", filepath.Base(path), th.tid)
		}
		tids[th.tid] = true
		if th.main {
			trackOf[th.pid] = i
		}
	}
	for i, th := range threads {
		if th.main && trackOf[th.pid] != i {
			t.Errorf("%s: main thread pid %s tid %s has no track", filepath.Base(path), th.pid, th.tid)
		}
	}
	oracle := os.Getenv("GPROF_ORACLE")
	if oracle == "" {
		oracle = "/work/shared/tools/oracle/oracle"
	}
	if _, err := os.Stat(oracle); err != nil {
		t.Logf("no front-end checker at %s", oracle)
		return
	}
	out, err := exec.Command(oracle, "--strict", path).Output()
	if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() == 2 {
		t.Logf("front-end checker unusable: %s", ee.Stderr)
		return
	}
	if err != nil {
		t.Errorf("%s: front-end checker: %v\n%s", filepath.Base(path), err, out)
		return
	}
	var sum struct {
		Tracks struct {
			Without []any `json:"threads_without_any_track"`
		} `json:"tracks"`
	}
	if err := json.Unmarshal(out, &sum); err != nil {
		t.Fatalf("front-end checker: %v", err)
	}
	if len(sum.Tracks.Without) > 0 {
		t.Errorf("%s: threads without a track: %v", filepath.Base(path), sum.Tracks.Without)
	}
}

// A shell that runs a while and then execs, in the launched process and in
// a forked subshell: each exec'd pid has two images (sh, then perl). Every
// thread must get a track and no tid may repeat, in the Gecko file and in
// its processed conversion, and record and report count the same number
// of processes.
func TestExecKeepsEveryThreadSelectable(t *testing.T) {
	if _, err := exec.LookPath("perl"); err != nil {
		t.Skip("perl is not installed")
	}
	dir := t.TempDir()
	out, conv := filepath.Join(dir, "x.json.gz"), filepath.Join(dir, "p.json.gz")
	spin := `i=0; while [ $i -lt 100000 ]; do i=$((i+1)); done`
	script := spin + `; (` + spin + `; exec perl -e '1 for 1..2e6'); exec perl -e '1 for 1..2e6'`
	r := mustRecord(t, "--json", "-o", out, "--", "sh", "-c", script)
	var sum struct{ Processes int }
	if err := json.Unmarshal([]byte(r.stdout), &sum); err != nil {
		t.Fatalf("record --json: %v\n%s", err, r.stdout)
	}
	p := r.profile
	// No pid is reused here, so each repeat of a pid is an exec.
	execs, seen := 0, map[int]bool{}
	for _, pr := range p.Processes {
		if seen[pr.Pid] {
			execs++
		}
		seen[pr.Pid] = true
	}
	if execs < 2 || sum.Processes != len(p.Processes)-execs {
		t.Errorf("record counted %d processes from %d images with %d execs; want images minus execs, with 2 execs or more",
			sum.Processes, len(p.Processes), execs)
	}
	if r := gprof(t, "convert", "-o", conv, out); r.code != 0 {
		t.Fatalf("convert: exit %d: %s", r.code, r.stderr)
	}
	for _, path := range []string{out, conv} {
		checkFrontEndTracks(t, path)
		var rep struct{ Processes int }
		if err := json.Unmarshal([]byte(gprof(t, "report", "--json", path).stdout), &rep); err != nil {
			t.Fatal(err)
		}
		if rep.Processes != sum.Processes {
			t.Errorf("%s: report counts %d processes, record %d", filepath.Base(path), rep.Processes, sum.Processes)
		}
	}
}
