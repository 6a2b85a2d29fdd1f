//go:build linux

package e2e

import (
	"fmt"
	"math"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gprof-dev/gprof/objfile"
	"github.com/gprof-dev/gprof/profile"
)

// TestPythonCallersInCExtensions is issue 26's check of Python stacks
// under C extensions with the perf backend, whose stacks are read as the
// kernel copied them at each sample (the BPF frame walker): on every
// CPython from 3.8 to 3.13, cextcalls.py's functions, one after the other
// and in two threads at once, show Python frames for 0.95 of their
// samples or more, and those frames are the ones running at the sample:
// SHA-256 under hasher, json's C encoder under dumps and its C scanner
// under loads, never the other's (a stack read a moment late lands in
// whichever function the loop runs then). hasher and jsoner take the
// same CPU time of their threads: half the samples each, within the
// sampling error. On 3.12 the ptrace backend, which reads each stack
// with the thread stopped, gives the same split between dumps and loads.
func TestPythonCallersInCExtensions(t *testing.T) {
	script := repoPath("testdata", "python", "cextcalls.py")
	pys := pythons(t)
	perfSplit := map[string][2]int{}
	for _, minor := range []string{"3.8", "3.9", "3.10", "3.11", "3.12", "3.13"} {
		py, ok := pys[minor]
		if !ok {
			continue
		}
		for _, mode := range []string{"serial", "threads"} {
			t.Run(minor+"/"+mode, func(t *testing.T) {
				r := mustRecord(t, "--backend", "perf", "--", py, script, "0.6", mode)
				checkPythonShare(t, r)
				c := classifyCExt(t, r.profile)
				t.Logf("%+v", c)
				checkCExt(t, c, true)
				if minor == "3.12" {
					perfSplit[mode] = [2]int{c.dumps, c.loads}
				}
			})
		}
	}
	// Attached to a running program: its threads' frames are copied from
	// the first sample (gprof finds the interpreter before sampling).
	for _, minor := range []string{"3.8", "3.12"} {
		py, ok := pys[minor]
		if !ok {
			continue
		}
		t.Run(minor+"/threads/attach", func(t *testing.T) {
			cmd := exec.Command(py, script, "4", "threads")
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
			time.Sleep(300 * time.Millisecond) // its threads start
			r := mustRecord(t, "--backend", "perf", "-d", "1.5", "-p", strconv.Itoa(cmd.Process.Pid))
			checkPythonShare(t, r)
			c := classifyCExt(t, r.profile)
			t.Logf("%+v", c)
			// Not the split: in a window of the run, the threads' shares
			// are the GIL's (hasher waits for it after each digest, while
			// jsoner holds it until asked to let go).
			checkCExt(t, c, false)
		})
	}
	py, ok := pys["3.12"]
	if !ok {
		return
	}
	for _, mode := range []string{"serial", "threads"} {
		t.Run("3.12/"+mode+"/ptrace", func(t *testing.T) {
			r := mustRecord(t, "--backend", "ptrace", "--", py, script, "0.6", mode)
			c := classifyCExt(t, r.profile)
			t.Logf("%+v", c)
			checkCExt(t, c, true)
			pf, ok := perfSplit[mode]
			if !ok || pf[0]+pf[1] == 0 || c.dumps+c.loads == 0 {
				t.Skip("no perf recording to compare with")
			}
			// dumps' share of jsoner's samples, perf against ptrace:
			// within four standard errors of the difference of two
			// perfect random samplers (3 points at least).
			n1, n2 := float64(pf[0]+pf[1]), float64(c.dumps+c.loads)
			p1, p2 := float64(pf[0])/n1, float64(c.dumps)/n2
			p := (p1*n1 + p2*n2) / (n1 + n2)
			tol := max(0.03, 4*math.Sqrt(p*(1-p)*(1/n1+1/n2)))
			margin(t, fmt.Sprintf("dumps' share of json, perf less ptrace (±%.3f)", tol), p1-p2, tol)
			if math.Abs(p1-p2) > tol {
				t.Errorf("dumps has %.1f%% of json's samples with perf, %.1f%% with ptrace; want within %.1f points", 100*p1, 100*p2, 100*tol)
			}
		})
	}
}

// checkPythonShare checks that 0.95 or more of a perf recording's samples
// in CPython got Python frames; it skips the test where the BPF frame
// walker could not be loaded (the recording says why).
func checkPythonShare(t *testing.T, r recording) {
	t.Helper()
	ex := r.profile.Meta.Extra
	t.Logf("%s; python_samples %s, python_unread %s, python_stale %s", ex["perf_python_snapshots"], ex["python_samples"], ex["python_unread"], ex["python_stale"])
	if why, ok := strings.CutPrefix(ex["perf_python_snapshots"], "none: "); ok {
		t.Skipf("the BPF frame walker could not be loaded here (%s): Python stacks are read after their samples", why)
	}
	merged, _ := strconv.Atoi(ex["python_samples"])
	unread, _ := strconv.Atoi(ex["python_unread"])
	share := float64(merged) / float64(max(1, merged+unread))
	margin(t, "samples in CPython with Python frames", share, 0.95)
	if share < 0.95 {
		t.Errorf("%d of %d samples in CPython show Python frames, want 0.95 or more", merged, merged+unread)
	}
}

// cextCounts classifies a cextcalls.py recording's samples by the native
// code they ran and the Python calls above it.
type cextCounts struct {
	// sha: samples in SHA-256 code (libcrypto); encoder, scanner: in
	// json's C encoder and scanner (the _json module).
	sha, encoder, scanner int
	// wrong: those whose Python calls are not the ones that run that
	// code (hasher above SHA-256; dumps above the encoder, loads above
	// the scanner); noPython: those with no Python frame.
	wrong, noPython int
	examples        []string
	// hasher, jsoner: samples under each; dumps, loads: under each
	// (within jsoner).
	hasher, jsoner, dumps, loads int
}

func classifyCExt(t *testing.T, p *profile.Profile) cextCounts {
	t.Helper()
	var c cextCounts
	syms := newSymbolCache()
	for _, pr := range p.Processes {
		if !strings.HasPrefix(filepath.Base(pr.Name), "python") {
			continue
		}
		for _, th := range pr.Threads {
			for _, st := range pySamples(th) {
				py := map[string]bool{}
				for _, f := range st {
					if f.Category == profile.CategoryPython {
						// 3.11+ name methods by their qualified name.
						py[f.Label[strings.LastIndexByte(f.Label, '.')+1:]] = true
					}
				}
				switch {
				case py["hasher"]:
					c.hasher++
				case py["jsoner"]:
					c.jsoner++
					if py["dumps"] {
						c.dumps++
					} else if py["loads"] {
						c.loads++
					}
				}
				// The innermost native code of a known kind.
				kind := ""
				for i := len(st) - 1; i >= 0 && kind == ""; i-- {
					f := st[i]
					if f.Label != "" {
						continue
					}
					l := profile.FindLib(pr.Libs, f.Address)
					if l == nil {
						continue
					}
					base := filepath.Base(l.Path)
					addr := f.Address
					if i != len(st)-1 {
						addr-- // a return address: the call is before it
					}
					switch {
					case strings.Contains(base, "libcrypto"):
						if name := syms.at(l, addr); strings.Contains(strings.ToLower(name), "sha256") {
							kind = "sha"
						}
					case strings.HasPrefix(base, "_json."):
						name := syms.at(l, addr)
						switch {
						case strings.HasPrefix(name, "encoder"):
							kind = "encoder"
						case strings.Contains(name, "scan"):
							kind = "scanner"
						}
					}
				}
				var want string
				switch kind {
				case "":
					continue
				case "sha":
					c.sha++
					want = "hasher"
				case "encoder":
					c.encoder++
					want = "dumps"
				case "scanner":
					c.scanner++
					want = "loads"
				}
				switch {
				case len(py) == 0:
					c.noPython++
				case !py[want]:
					c.wrong++
					if len(c.examples) < 3 {
						var names []string
						for _, f := range st {
							if f.Category == profile.CategoryPython {
								names = append(names, f.Label)
							}
						}
						c.examples = append(c.examples, kind+": "+strings.Join(names, " > "))
					}
				}
			}
		}
	}
	return c
}

// checkCExt checks the counts of one recording, and hasher's share of
// the samples where split.
func checkCExt(t *testing.T, c cextCounts, split bool) {
	t.Helper()
	known := c.sha + c.encoder + c.scanner
	if split && (c.sha < 50 || c.encoder < 50 || c.scanner < 50) || known < 200 {
		t.Fatalf("too few samples in SHA-256 (%d), json's encoder (%d) or scanner (%d): want 50 each, 200 in all", c.sha, c.encoder, c.scanner)
	}
	// A stack read late would be the loop's other half about half the
	// time: a third of the json samples wrong. Read at the sample, none
	// is; 1% leaves room for the first samples of a thread, read late
	// and checked only by their innermost function.
	if c.wrong*100 > known {
		t.Errorf("%d of %d samples in SHA-256 or json's C code have the wrong Python callers: %v", c.wrong, known, c.examples)
	}
	if !split {
		return
	}
	// hasher and jsoner ran for the same CPU time.
	n := float64(c.hasher + c.jsoner)
	got := float64(c.hasher) / n
	tol := max(0.03, 4*math.Sqrt(0.25/n))
	margin(t, fmt.Sprintf("hasher's share less 0.5 (±%.3f)", tol), got-0.5, tol)
	if math.Abs(got-0.5) > tol {
		t.Errorf("hasher has %.1f%% of the samples in hasher or jsoner, want 50±%.1f (the same CPU time as jsoner)", 100*got, 100*tol)
	}
}

// symbolCache names addresses in ELF files by their symbol tables.
type symbolCache struct {
	mu    sync.Mutex
	files map[string]*symFile
}

type symFile struct {
	segs []objfile.Segment
	syms []objfile.Symbol
}

func newSymbolCache() *symbolCache { return &symbolCache{files: map[string]*symFile{}} }

// at returns the function at addr in lib, "" if none is known.
func (c *symbolCache) at(lib *profile.Lib, addr uint64) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	sf, ok := c.files[lib.Path]
	if !ok {
		sf = &symFile{}
		if f, err := objfile.Open(lib.Path); err == nil {
			sf.segs = f.Segments()
			sf.syms, _ = f.Symbols()
			f.Close()
		}
		c.files[lib.Path] = sf
	}
	off := addr - lib.Start + lib.Offset
	for _, sg := range sf.segs {
		if off >= sg.Offset && off < sg.Offset+sg.FileSize {
			v := off - sg.Offset + sg.Addr
			for _, s := range sf.syms {
				if v >= s.Addr && v < s.Addr+s.Size {
					return s.Name
				}
			}
		}
	}
	return ""
}
