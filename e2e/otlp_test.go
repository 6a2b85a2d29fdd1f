//go:build linux

package e2e

// End-to-end tests of 'gprof push', 'record --push' and 'convert --to otlp'
// against a real OpenTelemetry Collector, built at test time from the
// Collector's own modules (testdata/otelcol, a module of its own, so none
// of it is in gprof's go.mod) and kept in the user's cache directory: the
// first run downloads and builds it (minutes), later runs reuse it.

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

var (
	otelcolOnce sync.Once
	otelcolPath string
	otelcolErr  error
)

// otelcolBinary builds testdata/otelcol once per cache key (its sources
// and the Go version) into the user's cache directory.
func otelcolBinary(t *testing.T) string {
	t.Helper()
	otelcolOnce.Do(func() { otelcolPath, otelcolErr = buildOtelcol() })
	if otelcolErr != nil {
		t.Fatalf("building the test Collector (testdata/otelcol; it needs the Go module proxy): %v", otelcolErr)
	}
	return otelcolPath
}

func buildOtelcol() (string, error) {
	src := repoPath("testdata", "otelcol")
	h := sha256.New()
	for _, f := range []string{"go.mod", "go.sum", "main.go"} {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s %d\n", f, len(b))
		h.Write(b)
	}
	fmt.Fprintln(h, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir := filepath.Join(cache, "gprof-test", "otelcol-"+hex.EncodeToString(h.Sum(nil))[:16])
	bin := filepath.Join(dir, "otelcol")
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	// Built from a copy (-mod=mod may add to go.sum: not in the working
	// tree) to a name of its own and renamed into place, so that test
	// runs side by side never see half a binary.
	work, err := os.MkdirTemp("", "gprof-otelcol-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(work)
	for _, f := range []string{"go.mod", "go.sum", "main.go"} {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err == nil {
			err = os.WriteFile(filepath.Join(work, f), b, 0o644)
		}
		if err != nil {
			return "", err
		}
	}
	tmp := fmt.Sprintf("%s.%d", bin, os.Getpid())
	cmd := exec.Command("go", "build", "-mod=mod", "-o", tmp, ".")
	cmd.Dir = work
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod", "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("%v\n%s", err, out)
	}
	return bin, os.Rename(tmp, bin)
}

// collector is a running test Collector: OTLP/HTTP in, OTLP JSON to a file.
type collector struct {
	url  string // its OTLP/HTTP base URL
	out  string // what the file exporter writes
	cmd  *exec.Cmd
	log  *bytes.Buffer
	done chan struct{}
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startCollector starts a Collector on a free loopback port with a
// profiles pipeline from the OTLP receiver to the file exporter.
func startCollector(t *testing.T) *collector { t.Helper(); return startCollectorLimit(t, 0) }

// startCollectorLimit is startCollector with the receiver taking requests
// of at most maxBody bytes (0: its default, 20 MiB).
func startCollectorLimit(t *testing.T, maxBody int) *collector {
	t.Helper()
	bin := otelcolBinary(t)
	dir := t.TempDir()
	for try := 0; ; try++ {
		port := freePort(t)
		c := &collector{url: fmt.Sprintf("http://127.0.0.1:%d", port), out: filepath.Join(dir, "profiles.jsonl"), log: &bytes.Buffer{}, done: make(chan struct{})}
		cfg := filepath.Join(dir, "config.yaml")
		if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:%d
        max_request_body_size: %d
exporters:
  file:
    path: %s
    flush_interval: 100ms
service:
  telemetry:
    metrics:
      level: none
  pipelines:
    profiles:
      receivers: [otlp]
      exporters: [file]
`, port, maxBody, c.out)), 0o644); err != nil {
			t.Fatal(err)
		}
		c.cmd = exec.Command(bin, "--config", "file:"+cfg, "--feature-gates=+service.profilesSupport")
		c.cmd.Stdout, c.cmd.Stderr = c.log, c.log
		if err := c.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { c.cmd.Wait(); close(c.done) }()
		if c.waitReady(port) {
			t.Cleanup(c.stop)
			return c
		}
		c.stop()
		// Another test may have taken the port between freePort and the
		// Collector's listen: try another.
		if try == 2 {
			t.Fatalf("the Collector did not start:\n%s", c.log)
		}
	}
}

// waitReady waits until the receiver accepts connections, or the
// Collector has exited.
func (c *collector) waitReady(port int) bool {
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-c.done:
			return false
		default:
		}
		conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
		if err == nil {
			conn.Close()
			return true
		}
		time.Sleep(100 * time.Millisecond)
	}
	return false
}

func (c *collector) stop() {
	select {
	case <-c.done:
		return
	default:
	}
	c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.done:
	case <-time.After(10 * time.Second):
		c.cmd.Process.Kill()
		<-c.done
	}
}

// requests returns the requests the Collector has exported, waiting (up to
// 30 s) until there are n.
func (c *collector) requests(t *testing.T, n int) []*otlpRequest {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		reqs := readJSONLines(t, c.out)
		if len(reqs) >= n {
			return reqs
		}
		if time.Now().After(deadline) {
			t.Fatalf("the Collector exported %d requests, want %d; its log:\n%s", len(reqs), n, c.log)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// readJSONLines reads the file exporter's output: one OTLP JSON request a
// line. A last line without its newline is still being written.
func readJSONLines(t *testing.T, path string) []*otlpRequest {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var out []*otlpRequest
	for _, line := range bytes.SplitAfter(data, []byte("\n")) {
		if !bytes.HasSuffix(line, []byte("\n")) || len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		out = append(out, parseOTLPJSON(t, line))
	}
	return out
}

// The OTLP JSON of a profiles request, as far as the tests read it.
// Numbers may come as JSON numbers or, 64-bit ones, as strings.
type (
	jint    int64
	otlpAny struct {
		StringValue *string
		IntValue    *jint
		// The Collector moves strings into the dictionary's table
		// (common.proto's string_value_strindex and key_strindex).
		StringValueStrindex *jint
	}
	otlpRequest struct {
		ResourceProfiles []struct {
			Resource struct {
				Attributes []struct {
					Key         string
					KeyStrindex *jint
					Value       otlpAny
				}
			}
			ScopeProfiles []struct {
				Profiles []struct {
					SampleType struct{ TypeStrindex, UnitStrindex jint }
					PeriodType struct{ TypeStrindex, UnitStrindex jint }
					Samples    []struct {
						StackIndex         jint
						AttributeIndices   []jint
						Values             []jint
						TimestampsUnixNano []jint
					}
				}
			}
		}
		Dictionary struct {
			MappingTable []struct {
				MemoryStart, MemoryLimit, FileOffset, FilenameStrindex jint
				AttributeIndices                                       []jint
			}
			LocationTable []struct {
				MappingIndex, Address jint
				Lines                 []struct{ FunctionIndex, Line jint }
			}
			FunctionTable  []struct{ NameStrindex, FilenameStrindex jint }
			StringTable    []string
			AttributeTable []struct {
				KeyStrindex jint
				Value       otlpAny
			}
			StackTable []struct{ LocationIndices []jint }
		}
	}
)

func (n *jint) UnmarshalJSON(b []byte) error {
	s := strings.Trim(string(b), `"`)
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		var i int64
		if i, err = strconv.ParseInt(s, 10, 64); err != nil {
			return err
		}
		v = uint64(i)
	}
	*n = jint(v)
	return nil
}

func (a otlpAny) String(strings []string) string {
	switch {
	case a.StringValueStrindex != nil:
		return strings[*a.StringValueStrindex]
	case a.StringValue != nil:
		return *a.StringValue
	case a.IntValue != nil:
		return strconv.FormatInt(int64(*a.IntValue), 10)
	}
	return ""
}

func parseOTLPJSON(t *testing.T, data []byte) *otlpRequest {
	t.Helper()
	r := &otlpRequest{}
	if err := json.Unmarshal(data, r); err != nil {
		t.Fatalf("not OTLP JSON: %v\n%.300s", err, data)
	}
	return r
}

// decodeOTLP decodes a request, protobuf or OTLP JSON, with the
// Collector's own code (the test Collector's decode: pdata's decoders and
// JSON encoder).
func decodeOTLP(t *testing.T, data []byte) *otlpRequest {
	t.Helper()
	cmd := exec.Command(otelcolBinary(t), "decode")
	cmd.Stdin = bytes.NewReader(data)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the Collector's pdata cannot decode the request: %v: %s", err, stderr.String())
	}
	return parseOTLPJSON(t, out)
}

// otlpProcess is what a request says of one resource (process).
type otlpProcess struct {
	attrs       map[string]string
	samples     int64
	cpu         int64
	self, total map[string]int64 // samples by function name
	threads     map[int64]string // thread.id → thread.name
	buildIDs    map[string]string
	period      string // the samples profile's period type/unit
}

// summarize reads a request as report reads a profile: each sample's leaf
// function (innermost inline frame) gets its self samples; every function
// on the stack its total samples, once per sample. Addresses without
// names are named as report names them: lib+0xoffset, or 0xaddress.
func summarize(t *testing.T, d *otlpRequest) []otlpProcess {
	t.Helper()
	dict := d.Dictionary
	s := func(i jint) string { return dict.StringTable[i] }
	var out []otlpProcess
	for _, rp := range d.ResourceProfiles {
		p := otlpProcess{attrs: map[string]string{}, self: map[string]int64{}, total: map[string]int64{}, threads: map[int64]string{}, buildIDs: map[string]string{}}
		for _, kv := range rp.Resource.Attributes {
			key := kv.Key
			if kv.KeyStrindex != nil {
				key = dict.StringTable[*kv.KeyStrindex]
			}
			p.attrs[key] = kv.Value.String(dict.StringTable)
		}
		if len(rp.ScopeProfiles) != 1 || len(rp.ScopeProfiles[0].Profiles) != 2 {
			t.Fatalf("resource %v: want one scope with two profiles", p.attrs)
		}
		for _, prof := range rp.ScopeProfiles[0].Profiles {
			typ := s(prof.SampleType.TypeStrindex) + "/" + s(prof.SampleType.UnitStrindex)
			if typ == "samples/count" {
				p.period = s(prof.PeriodType.TypeStrindex) + "/" + s(prof.PeriodType.UnitStrindex)
			}
			for _, smp := range prof.Samples {
				var v int64
				for _, x := range smp.Values {
					v += int64(x)
				}
				if typ == "cpu/nanoseconds" {
					p.cpu += v
					continue
				}
				if typ != "samples/count" {
					t.Fatalf("sample type %s", typ)
				}
				p.samples += v
				for _, a := range smp.AttributeIndices {
					kv := dict.AttributeTable[a]
					if s(kv.KeyStrindex) == "thread.id" {
						tid := int64(*kv.Value.IntValue)
						if _, ok := p.threads[tid]; !ok {
							p.threads[tid] = ""
						}
						for _, b := range smp.AttributeIndices {
							if kb := dict.AttributeTable[b]; s(kb.KeyStrindex) == "thread.name" {
								p.threads[tid] = kb.Value.String(dict.StringTable)
							}
						}
					}
				}
				seen := map[string]bool{}
				for depth, li := range dict.StackTable[smp.StackIndex].LocationIndices {
					loc := dict.LocationTable[li]
					var names []string
					for _, l := range loc.Lines {
						names = append(names, s(dict.FunctionTable[l.FunctionIndex].NameStrindex))
					}
					if len(names) == 0 {
						m := dict.MappingTable[loc.MappingIndex]
						if loc.MappingIndex != 0 {
							names = []string{fmt.Sprintf("%s+0x%x", filepath.Base(s(m.FilenameStrindex)), uint64(loc.Address)-(uint64(m.MemoryStart)-uint64(m.FileOffset)))}
						} else {
							names = []string{fmt.Sprintf("0x%x", uint64(loc.Address))}
						}
					}
					if loc.MappingIndex != 0 {
						m := dict.MappingTable[loc.MappingIndex]
						for _, a := range m.AttributeIndices {
							if kv := dict.AttributeTable[a]; s(kv.KeyStrindex) == "process.executable.build_id.gnu" {
								p.buildIDs[filepath.Base(s(m.FilenameStrindex))] = kv.Value.String(dict.StringTable)
							}
						}
					}
					if depth == 0 {
						p.self[names[0]] += v
					}
					for _, n := range names {
						if !seen[n] {
							seen[n] = true
							p.total[n] += v
						}
					}
				}
			}
		}
		out = append(out, p)
	}
	return out
}

// reportFull is what these tests read of 'gprof report --json'.
type reportFull struct {
	Samples int64 `json:"samples"`
	CPU     int64 `json:"cpu_ns"`
	Threads []struct {
		Pid  int64  `json:"pid"`
		Tid  int64  `json:"tid"`
		Name string `json:"thread_name"`
	} `json:"threads"`
	All struct {
		TopSelf []struct {
			Name string `json:"name"`
			Self int64  `json:"self_samples"`
		} `json:"top_self"`
		TopTotal []struct {
			Name  string  `json:"name"`
			Total int64   `json:"total_samples"`
			Pct   float64 `json:"total_pct_all"`
		} `json:"top_total"`
	} `json:"all"`
}

func fullReport(t *testing.T, path string) reportFull {
	t.Helper()
	r := gprof(t, "report", "--json", "--top", "-1", path)
	if r.code != 0 {
		t.Fatalf("report: exit %d: %s", r.code, r.stderr)
	}
	var rep reportFull
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("report --json: %v", err)
	}
	return rep
}

// checkAgainstReport compares a request's only process with report's
// figures for the profile it was made of: samples, CPU time, and every
// function's self samples; total samples for the functions named once.
func checkAgainstReport(t *testing.T, what string, got otlpProcess, rep reportFull) {
	t.Helper()
	if got.samples != rep.Samples || got.cpu != rep.CPU {
		t.Errorf("%s: %d samples and %d ns of CPU; report says %d and %d", what, got.samples, got.cpu, rep.Samples, rep.CPU)
	}
	selfRep := map[string]int64{}
	for _, f := range rep.All.TopSelf {
		if f.Self > 0 {
			selfRep[f.Name] += f.Self
		}
	}
	for name, n := range selfRep {
		if got.self[name] != n {
			t.Errorf("%s: %s has %d self samples; report says %d", what, name, got.self[name], n)
		}
	}
	for name, n := range got.self {
		if selfRep[name] != n {
			t.Errorf("%s: %s has %d self samples; report says %d", what, name, n, selfRep[name])
		}
	}
	count := map[string]int{}
	for _, f := range rep.All.TopTotal {
		count[f.Name]++
	}
	for _, f := range rep.All.TopTotal {
		if count[f.Name] == 1 && got.total[f.Name] != f.Total {
			t.Errorf("%s: %s has %d total samples; report says %d", what, f.Name, got.total[f.Name], f.Total)
		}
	}
}

// fileState is what 'push never changes its inputs' is checked on.
func fileState(t *testing.T, path string) string {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x %v %v", sha256.Sum256(b), st.ModTime().UnixNano(), st.Mode())
}

// TestPushToCollector is issue 20's acceptance check: record --push and
// push of split, a program with a known 50/30/20 CPU split, reach a real
// Collector with the figures 'gprof report' gives, the resource
// attributes and labels, and the split itself.
func TestPushToCollector(t *testing.T) {
	bin := buildC(t, "split")
	col := startCollector(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "p.json.gz")
	mustRecord(t, "-q", "-r", "2000", "-o", out, "--push", col.url,
		"--service-name", "split-bench", "--label", "vcs.ref.head.revision=0123abc", "--label", "ci.note=a, b=c", "--", bin, "2", "1")
	rep := fullReport(t, out)
	reqs := col.requests(t, 1)
	procs := summarize(t, reqs[0])
	if len(procs) != 1 {
		t.Fatalf("%d resources, want split's one", len(procs))
	}
	got := procs[0]
	checkAgainstReport(t, "record --push", got, rep)
	host, _ := os.Hostname()
	pid := strconv.FormatInt(rep.Threads[0].Pid, 10)
	for k, want := range map[string]string{
		"service.name": "split-bench", "process.pid": pid, "process.executable.name": "split", "host.name": host,
		"vcs.ref.head.revision": "0123abc", "ci.note": "a, b=c",
	} {
		if got.attrs[k] != want {
			t.Errorf("resource attribute %s = %q, want %q", k, got.attrs[k], want)
		}
	}
	for _, th := range rep.Threads {
		if name, ok := got.threads[th.Tid]; !ok || name != th.Name {
			t.Errorf("thread %d (%s): in the request as %q, %v", th.Tid, th.Name, name, ok)
		}
	}
	if want := fmt.Sprintf("%x", readelfBuildID(t, bin)); got.buildIDs["split"] != want {
		t.Errorf("split's mapping has build ID %q, want %s", got.buildIDs["split"], want)
	}
	// Ground truth: the total shares of the work functions (a [kernel]
	// frame on top of one counts in its total) are 50/30/20, within four
	// standard errors of a share of N samples and a point.
	for name, want := range map[string]float64{"work_a": 50, "work_b": 30, "work_c": 20} {
		share := 100 * float64(got.total[name]) / float64(got.samples)
		tol := 100*4*math.Sqrt(want/100*(1-want/100)/float64(got.samples)) + 1
		margin(t, fmt.Sprintf("%s total %% in the Collector (±%.1f)", name, tol), share, want)
		if math.Abs(share-want) > tol {
			t.Errorf("%s: %.1f%% of the samples the Collector got, want %.0f ± %.1f", name, share, want, tol)
		}
	}

	// push: the same profile, from its file, which it leaves as it was;
	// the service is then the process's name.
	before := fileState(t, out)
	r := gprof(t, "push", "--endpoint", col.url+"/v1development/profiles", out)
	if r.code != 0 || !strings.Contains(r.stderr, "gprof: pushed "+out) {
		t.Fatalf("push: exit %d: %s", r.code, r.stderr)
	}
	if after := fileState(t, out); after != before {
		t.Errorf("push changed its input: %s, was %s", after, before)
	}
	reqs = col.requests(t, 2)
	again := summarize(t, reqs[1])
	checkAgainstReport(t, "push", again[0], rep)
	if again[0].attrs["service.name"] != "split" || again[0].attrs["vcs.ref.head.revision"] != "" {
		t.Errorf("push without flags: attributes %v", again[0].attrs)
	}

	// Any format gprof reads: the pprof conversion of the profile (no time
	// axis there: one summed value per stack) arrives with the figures
	// report gives for it.
	pp := filepath.Join(dir, "p.pb.gz")
	if r := gprof(t, "convert", "--to", "pprof", out, "-o", pp); r.code != 0 {
		t.Fatalf("convert --to pprof: %s", r.stderr)
	}
	if r := gprof(t, "push", "-q", "--endpoint", col.url, pp); r.code != 0 || r.stderr != "" {
		t.Fatalf("push of a pprof file: exit %d: %q", r.code, r.stderr)
	}
	checkAgainstReport(t, "push of pprof", summarize(t, col.requests(t, 3)[2])[0], fullReport(t, pp))

	// convert --to otlp writes what push sends: protobuf, and OTLP JSON
	// for .json names.
	for _, name := range []string{"req.pb", "req.json"} {
		path := filepath.Join(dir, name)
		if r := gprof(t, "convert", "--to", "otlp", "--service-name", "split-bench", out, "-o", path); r.code != 0 {
			t.Fatalf("convert --to otlp: exit %d: %s", r.code, r.stderr)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		conv := summarize(t, decodeOTLP(t, data))
		checkAgainstReport(t, "convert "+name, conv[0], rep)
		if conv[0].attrs["service.name"] != "split-bench" {
			t.Errorf("%s: service.name %q", name, conv[0].attrs["service.name"])
		}
	}
}

// TestPushCollectorDown: with the Collector stopped, push retries until
// its bound, then says so in one line and exits 5; record --push writes
// its profile all the same, says where it is, and exits 5 too.
func TestPushCollectorDown(t *testing.T) {
	bin := buildC(t, "split")
	col := startCollector(t)
	col.stop()
	dir := t.TempDir()
	out := filepath.Join(dir, "p.json.gz")
	sum := filepath.Join(dir, "summary.json")
	start := time.Now()
	r := mustRecordExit(t, 5, "-o", out, "--json-output", sum, "--push", col.url, "--push-timeout", "3s", "--", bin, "1", "0.3").result
	if !strings.Contains(r.stderr, "the profile was not pushed: cannot reach the collector at "+col.url) ||
		!strings.Contains(r.stderr, "connection refused") || !strings.Contains(r.stderr, "it is in "+out) ||
		!regexp.MustCompile(`gave up after [2-9]\d* attempts`).MatchString(r.stderr) {
		t.Errorf("stderr does not say what happened:\n%s", r.stderr)
	}
	if n := strings.Count(r.stderr, "trying again in"); n < 1 {
		t.Errorf("no retry was announced:\n%s", r.stderr)
	}
	rep := fullReport(t, out)
	if rep.Samples == 0 {
		t.Error("the profile written has no samples")
	}
	b, err := os.ReadFile(sum)
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Pushed   *bool `json:"pushed"`
		ExitCode *int  `json:"exit_code"`
	}
	if err := json.Unmarshal(b, &s); err != nil || s.Pushed == nil || *s.Pushed || s.ExitCode == nil || *s.ExitCode != 0 {
		t.Errorf("summary %s: want pushed false and exit_code 0", b)
	}

	// push alone: the same, and its input unchanged.
	before := fileState(t, out)
	start = time.Now()
	r = gprof(t, "push", "--endpoint", col.url, "--timeout", "2s", out)
	elapsed := time.Since(start)
	if r.code != 5 || !strings.Contains(r.stderr, "not pushed: cannot reach the collector") {
		t.Fatalf("push to a stopped Collector: exit %d, want 5: %s", r.code, r.stderr)
	}
	// The bound holds (a loose check: a loaded machine adds start-up
	// time, never retries).
	margin(t, "push gave up after (s)", elapsed.Seconds(), 2)
	if elapsed > 20*time.Second {
		t.Errorf("push took %s to give up, bound 2s", elapsed)
	}
	if fileState(t, out) != before {
		t.Error("a failed push changed its input")
	}
}

// httpCollector answers with codes in turn (the last from then on), as a
// collector would, and keeps the requests it was sent.
type httpCollector struct {
	codes []int
	calls atomic.Int32
	mu    sync.Mutex
	last  []byte
	hdr   http.Header
}

func (h *httpCollector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := int(h.calls.Add(1))
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err == nil {
			body = zr
		}
	}
	data, _ := io.ReadAll(body)
	h.mu.Lock()
	h.last, h.hdr = data, r.Header.Clone()
	h.mu.Unlock()
	code := h.codes[min(n, len(h.codes))-1]
	if code == http.StatusOK {
		w.Header().Set("Content-Type", "application/x-protobuf")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	fmt.Fprintf(w, `{"code":3,"message":"test collector says %d"}`, code)
}

// TestPushRetriesAndRefusals: a collector answering 503 and then 200 gets
// the profile; one that always answers 503 is given up within --timeout;
// a 400 is final and its message shown; https works with --ca-file (and
// is refused, without retries, without it); --header is sent.
func TestPushRetriesAndRefusals(t *testing.T) {
	bin := buildC(t, "split")
	dir := t.TempDir()
	out := filepath.Join(dir, "p.json.gz")
	mustRecord(t, "-q", "-o", out, "--", bin, "1", "0.3")
	rep := fullReport(t, out)

	flaky := &httpCollector{codes: []int{503, 503, 200}}
	srv := httptest.NewServer(flaky)
	defer srv.Close()
	r := gprof(t, "push", "--endpoint", srv.URL, "--header", "Authorization: Bearer s3cret", out)
	if r.code != 0 || flaky.calls.Load() != 3 || strings.Count(r.stderr, "503 Service Unavailable: test collector says 503; trying again") != 2 {
		t.Fatalf("503, 503, 200: exit %d after %d calls:\n%s", r.code, flaky.calls.Load(), r.stderr)
	}
	flaky.mu.Lock()
	body, hdr := flaky.last, flaky.hdr
	flaky.mu.Unlock()
	checkAgainstReport(t, "after retries", summarize(t, decodeOTLP(t, body))[0], rep)
	if hdr.Get("Authorization") != "Bearer s3cret" || hdr.Get("Content-Encoding") != "gzip" || hdr.Get("OTLP-Profiles-Development-Version") != "1" {
		t.Errorf("headers sent: %v", hdr)
	}

	down := &httpCollector{codes: []int{503}}
	srv503 := httptest.NewServer(down)
	defer srv503.Close()
	start := time.Now()
	r = gprof(t, "push", "--endpoint", srv503.URL, "--timeout", "2s", out)
	elapsed := time.Since(start)
	if r.code != 5 || !strings.Contains(r.stderr, "answered 503 Service Unavailable: test collector says 503 (gave up after") {
		t.Errorf("always 503: exit %d:\n%s", r.code, r.stderr)
	}
	margin(t, "gave up on 503 after (s)", elapsed.Seconds(), 2)
	if elapsed > 20*time.Second || down.calls.Load() < 2 {
		t.Errorf("always 503: %d calls over %s, bound 2s", down.calls.Load(), elapsed)
	}

	bad := &httpCollector{codes: []int{400}}
	srv400 := httptest.NewServer(bad)
	defer srv400.Close()
	r = gprof(t, "push", "--endpoint", srv400.URL, out)
	if r.code != 5 || bad.calls.Load() != 1 || !strings.Contains(r.stderr, "answered 400 Bad Request: test collector says 400") {
		t.Errorf("400: exit %d after %d calls:\n%s", r.code, bad.calls.Load(), r.stderr)
	}

	tlsCol := &httpCollector{codes: []int{200}}
	tlsSrv := httptest.NewTLSServer(tlsCol)
	defer tlsSrv.Close()
	ca := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: tlsSrv.Certificate().Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := gprof(t, "push", "--endpoint", tlsSrv.URL, "--ca-file", ca, out); r.code != 0 || tlsCol.calls.Load() != 1 {
		t.Errorf("https with --ca-file: exit %d:\n%s", r.code, r.stderr)
	}
	if r := gprof(t, "push", "--endpoint", tlsSrv.URL, out); r.code != 5 || !strings.Contains(r.stderr, "certificate") || strings.Contains(r.stderr, "trying again") {
		t.Errorf("https with an unknown CA: exit %d:\n%s", r.code, r.stderr)
	}

	// Command-line mistakes are exit 2, before anything is read or sent.
	for _, args := range [][]string{
		{"push", out},
		{"push", "--endpoint", "localhost:4318", out},
		{"push", "--endpoint", srv.URL},
		{"push", "--endpoint", srv.URL, "--label", "novalue", out},
		{"push", "--endpoint", srv.URL, "--header", "NoColon", out},
		{"push", "--endpoint", srv.URL, "--timeout", "0", out},
		{"record", "--label", "a=b", "-o", filepath.Join(dir, "x.json"), "--", "true"},
	} {
		if r := gprof(t, args...); r.code != 2 {
			t.Errorf("gprof %s: exit %d, want 2: %s", strings.Join(args, " "), r.code, r.stderr)
		}
	}
	if r := gprof(t, "push", "--endpoint", srv.URL, filepath.Join(dir, "missing.json.gz")); r.code != 1 {
		t.Errorf("push of a missing file: exit %d, want 1: %s", r.code, r.stderr)
	}
}

// docSection returns the text of the repository's file doc (docs/otlp.md)
// from the heading to the next heading of the same level.
func docSection(t *testing.T, doc, heading string) string {
	t.Helper()
	b, err := os.ReadFile(repoPath(doc))
	if err != nil {
		t.Fatal(err)
	}
	s := "\n" + string(b)
	i := strings.Index(s, "\n"+heading+"\n")
	if i < 0 {
		t.Fatalf("%s has no %q", doc, heading)
	}
	s = s[i+1+len(heading):]
	level := heading[:strings.Index(heading, " ")+1]
	if j := strings.Index(s, "\n"+level); j >= 0 {
		s = s[:j]
	}
	return s
}

// codeBlocks returns the fenced blocks of language lang in text.
func codeBlocks(text, lang string) []string {
	var out []string
	for _, m := range regexp.MustCompile("(?s)```"+lang+"\n(.*?)```").FindAllStringSubmatch(text, -1) {
		out = append(out, m[1])
	}
	return out
}

// TestREADMEPushExample runs the CI example of docs/otlp.md (once the
// README's) as pasted, in a scratch checkout with this repository's
// split.c, against a test Collector standing where the example's is
// (localhost:4318 becomes its address), with the gprof under test as
// ./bin/gprof; and checks the page's Collector configuration with the
// Collector's own validation.
func TestREADMEPushExample(t *testing.T) {
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("gcc is not installed (./test.sh installs it)")
	}
	section := docSection(t, "docs/otlp.md", "# Send profiles to the fleet (OpenTelemetry)")
	shells := codeBlocks(section, "sh")
	if len(shells) == 0 {
		t.Fatal("the section has no sh example")
	}
	script := shells[0]
	const build = "go build -o bin/gprof . && "
	if !strings.HasPrefix(script, build) || !strings.Contains(script, "http://localhost:4318") {
		t.Fatalf("the example does not start with %q or does not push to http://localhost:4318:\n%s", build, script)
	}
	col := startCollector(t)
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(gprofBin, filepath.Join(dir, "bin", "gprof")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "testdata"), 0o755); err != nil {
		t.Fatal(err)
	}
	copyFile(t, repoPath("testdata", "split.c"), filepath.Join(dir, "testdata", "split.c"))
	git := func(args ...string) string {
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Skipf("git %v: %v %s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "-q", "-b", "main")
	git("commit", "-q", "--allow-empty", "-m", "x")
	head := git("rev-parse", "HEAD")

	// gprof is already built: the build step is the one line not run.
	script = strings.TrimPrefix(script, build)
	script = strings.ReplaceAll(script, "http://localhost:4318", col.url)
	cmd := exec.Command("bash", "-c", script)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("docs/otlp.md's example failed: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "exit status 0") {
		skipIfNoPerf(t, result{stderr: string(out), code: 1})
		t.Fatalf("docs/otlp.md's example did not push:\n%s", out)
	}
	procs := summarize(t, col.requests(t, 1)[0])
	if len(procs) != 1 {
		t.Fatalf("%d resources", len(procs))
	}
	for k, want := range map[string]string{"vcs.ref.head.revision": head, "vcs.ref.head.name": "main", "service.name": "split-bench"} {
		if procs[0].attrs[k] != want {
			t.Errorf("resource attribute %s = %q, want %q (all: %v)", k, procs[0].attrs[k], want, procs[0].attrs)
		}
	}
	if procs[0].self["work_a"] == 0 {
		t.Errorf("no work_a samples: %v", procs[0].self)
	}

	// The Collector configuration the section shows is one a Collector
	// with these components accepts (validate does not start it).
	yamls := codeBlocks(section, "yaml")
	if len(yamls) == 0 {
		t.Fatal("the section shows no Collector configuration")
	}
	cfg := filepath.Join(dir, "collector.yaml")
	if err := os.WriteFile(cfg, []byte(yamls[0]), 0o644); err != nil {
		t.Fatal(err)
	}
	v := exec.Command(otelcolBinary(t), "validate", "--config", "file:"+cfg, "--feature-gates=+service.profilesSupport")
	if out, err := v.CombinedOutput(); err != nil {
		t.Errorf("docs/otlp.md's Collector configuration does not validate: %v\n%s", err, out)
	}
}

// TestPushSplitsLargeProfiles: a profile whose request is larger than the
// Collector takes is refused whole (exit 5, with its message), and
// delivered in parts with --max-request-size: the parts together have
// report's figures.
func TestPushSplitsLargeProfiles(t *testing.T) {
	bin := buildC(t, "split")
	dir := t.TempDir()
	out := filepath.Join(dir, "p.json.gz")
	mustRecord(t, "-q", "-r", "4000", "-o", out, "--", bin, "2", "2")
	rep := fullReport(t, out)
	req := filepath.Join(dir, "req.pb")
	if r := gprof(t, "convert", "--to", "otlp", out, "-o", req); r.code != 0 {
		t.Fatalf("convert: %s", r.stderr)
	}
	st, err := os.Stat(req)
	if err != nil {
		t.Fatal(err)
	}
	const limit = 64 << 10
	if st.Size() < 3*limit {
		t.Fatalf("the request is %d bytes: too small to need parts of %d", st.Size(), limit)
	}
	col := startCollectorLimit(t, limit)
	r := gprof(t, "push", "--endpoint", col.url, "--max-request-size", "1G", out)
	if r.code != 5 || !strings.Contains(r.stderr, "not pushed") {
		t.Errorf("a request over the Collector's limit: exit %d: %s", r.code, r.stderr)
	}
	r = gprof(t, "push", "--endpoint", col.url, "--max-request-size", "64K", out)
	if r.code != 0 || !regexp.MustCompile(`in \d+ requests`).MatchString(r.stderr) {
		t.Fatalf("push --max-request-size 64K: exit %d: %s", r.code, r.stderr)
	}
	n, _ := strconv.Atoi(regexp.MustCompile(`in (\d+) requests`).FindStringSubmatch(r.stderr)[1])
	all := otlpProcess{self: map[string]int64{}, total: map[string]int64{}}
	for _, d := range col.requests(t, n) {
		for _, p := range summarize(t, d) {
			all.samples += p.samples
			all.cpu += p.cpu
			for k, v := range p.self {
				all.self[k] += v
			}
		}
	}
	if all.samples != rep.Samples || all.cpu != rep.CPU {
		t.Errorf("%d requests hold %d samples and %d ns; report says %d and %d", n, all.samples, all.cpu, rep.Samples, rep.CPU)
	}
	for _, f := range rep.All.TopSelf {
		if f.Self > 0 && all.self[f.Name] < f.Self {
			t.Errorf("%s: %d self samples in the parts, report says %d", f.Name, all.self[f.Name], f.Self)
		}
	}
}

// TestPushOffCPU: a recording with --off-cpu, of a program that sleeps,
// arrives with samples of wall-clock time (period type wall), equal to
// report's, blocked time included.
func TestPushOffCPU(t *testing.T) {
	col := startCollector(t)
	out := filepath.Join(t.TempDir(), "p.json.gz")
	mustRecord(t, "-q", "--off-cpu", "-o", out, "--push", col.url, "--", "sleep", "0.3")
	rep := fullReport(t, out)
	got := summarize(t, col.requests(t, 1)[0])[0]
	checkAgainstReport(t, "--off-cpu", got, rep)
	if got.period != "wall/nanoseconds" || got.self["[blocked]"] < rep.Samples/2 {
		t.Errorf("period type %s, %d of %d samples blocked; want wall/nanoseconds, most blocked", got.period, got.self["[blocked]"], got.samples)
	}
}
