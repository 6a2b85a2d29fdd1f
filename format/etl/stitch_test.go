package etl

import (
	"bytes"
	"cmp"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/gprof-dev/gprof/etw"
)

// TestStackLeafIsSampleIP checks the binding of stack events to samples:
// the leaf of a sample's stack, once cached stack keys are resolved, is the
// sampled instruction. Binding a reused key to the wrong definition (the
// last one, say) breaks this for a third of the samples.
func TestStackLeafIsSampleIP(t *testing.T) {
	b := newBuilder()
	if err := etw.WalkETL(bytes.NewReader(perfView(t)), b.event); err != nil {
		t.Fatal(err)
	}
	for _, ds := range b.defs {
		slices.SortStableFunc(ds, func(x, y keyDef) int { return cmp.Compare(x.time, y.time) })
	}
	withStack, leafIP, both := 0, 0, 0
	for _, r := range b.recs {
		if r.kind != etw.KindSample {
			continue
		}
		var kern, user []uint64
		for _, f := range b.frags[stackKey{r.tid, r.time}] {
			switch a := b.resolve(f); {
			case len(a) == 0:
			case a[0] >= 0xFFFF800000000000:
				kern = a
			default:
				user = a
			}
		}
		leaf := kern
		if leaf == nil {
			leaf = user
		}
		if leaf == nil {
			continue
		}
		withStack++
		if leaf[0] == r.ip {
			leafIP++
		}
		if kern != nil && user != nil {
			both++
		}
	}
	// Nearly every non-idle sample (88,809 less the Idle process's 82,128)
	// has a stack.
	if withStack < 6500 {
		t.Errorf("%d samples have a stack", withStack)
	}
	if leafIP < withStack*999/1000 {
		t.Errorf("the leaf is the sampled IP in %d of %d stacks", leafIP, withStack)
	}
	// The kernel and user halves of a stack come in separate events.
	if both < 300 {
		t.Errorf("%d samples joined a kernel and a user half", both)
	}
}

// A trace of user-mode providers only is an ETL file, but not a profile.
func TestUserModeOnlyTrace(t *testing.T) {
	data, err := os.ReadFile("../../etw/testdata/usermode.etl")
	if err != nil {
		t.Fatal(err)
	}
	if !Sniff(data) {
		t.Fatal("usermode.etl is not recognized as an ETL file")
	}
	_, err = Read(bytes.NewReader(data))
	if err == nil || !strings.Contains(err.Error(), "no CPU samples") || !strings.Contains(err.Error(), "PROFILE") {
		t.Fatalf("err = %v, want one saying how to record a profile", err)
	}
}

// An image the trace has no RSDS event for takes its identity from the
// file on disk, if it is the one that was loaded.
func TestIdentityFromDisk(t *testing.T) {
	path := "../../etw/testdata/hello-mingw.exe"
	id, err := etw.ReadPEIdentity(path)
	if err != nil {
		t.Fatal(err)
	}
	b := newBuilder()
	im := &image{Image: etw.Image{Base: 0x400000, Size: uint64(id.SizeOfImage), TimeDateStamp: id.TimeDateStamp, FileName: path}}
	l := makeLib(im, nil)
	b.identityFromDisk(&l, im)
	if l.BreakpadID != id.BreakpadID() || l.CodeID != id.CodeID() {
		t.Errorf("lib %+v", l)
	}
	// Another build at that path (its size differs) is not the image.
	im2 := &image{Image: etw.Image{Base: 0x400000, Size: uint64(id.SizeOfImage) + 0x1000, FileName: path}}
	l2 := makeLib(im2, nil)
	b.identityFromDisk(&l2, im2)
	if l2.BreakpadID != "" {
		t.Errorf("identity taken from another build: %+v", l2)
	}
}

// A circular trace loses its start rundown: threads and processes that
// existed before it began are named only by the end rundown, after their
// samples. Their samples must still be kept.
func TestCircularTraceKeepsSamples(t *testing.T) {
	count := func(drop bool) map[string]int {
		b := newBuilder()
		if err := etw.WalkETL(bytes.NewReader(perfView(t)), b.event); err != nil {
			t.Fatal(err)
		}
		if drop {
			first := int64(-1)
			for _, r := range b.recs {
				if r.kind == etw.KindSample && (first < 0 || r.time < first) {
					first = r.time
				}
			}
			b.recs = slices.DeleteFunc(b.recs, func(r record) bool {
				return r.time < first && (r.kind == etw.KindThreadRundown || r.kind == etw.KindProcessRundown)
			})
		}
		out := map[string]int{}
		for _, pr := range b.profile().Processes {
			for _, th := range pr.Threads {
				out[pr.Name] += th.Samples.Len()
			}
		}
		return out
	}
	full, circular := count(false), count(true)
	if full["PerfView.exe"] == 0 {
		t.Fatalf("no PerfView.exe samples: %v", full)
	}
	for _, name := range []string{"PerfView.exe", "MsMpEng.exe", "dwm.exe", "Idle", "Test.x86.exe"} {
		if circular[name] != full[name] {
			t.Errorf("%s: %d samples without the start rundown, %d with it", name, circular[name], full[name])
		}
	}
}

// A merger that does not put the identity events right before their image
// still gets them joined, by process and base.
func TestLooseIdentityJoin(t *testing.T) {
	libsOf := func(loose bool) map[string]string {
		b := newBuilder()
		etw.WalkETL(bytes.NewReader(perfView(t)), func(e *etw.Event, cpu, buf int) {
			if loose && (etw.KindOf(e) == etw.KindImageID || etw.KindOf(e) == etw.KindDbgIDRSDS) {
				e.Time += 1e7 // a second later: no longer adjacent
			}
			b.event(e, cpu, buf)
		})
		out := map[string]string{}
		for _, pr := range b.profile().Processes {
			if pr.Pid != 3644 {
				continue
			}
			for _, l := range pr.Libs {
				out[l.Path] = l.BreakpadID + " " + l.CodeID
			}
		}
		return out
	}
	adjacent, loose := libsOf(false), libsOf(true)
	if len(adjacent) < 100 {
		t.Fatalf("%d libs", len(adjacent))
	}
	for path, id := range adjacent {
		if loose[path] != id {
			t.Errorf("%s: %q joined loosely, %q adjacent", path, loose[path], id)
		}
	}
}
