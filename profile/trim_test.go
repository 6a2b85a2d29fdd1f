package profile

import (
	"math/rand"
	"reflect"
	"testing"
)

// stackFrames expands stack s of th into its frames, leaf first.
func stackFrames(th *Thread, s int32) []Frame {
	var out []Frame
	for ; s != NoStack; s = th.Stacks.Prefix[s] {
		out = append(out, th.Frames.Frames[th.Stacks.Frame[s]])
	}
	return out
}

func TestDropBeforeAndCompact(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	th := &Thread{}
	var want [][]Frame
	for i := 0; i < 5000; i++ {
		depth := 1 + rng.Intn(6)
		var leafFirst []Frame
		for d := 0; d < depth; d++ {
			leafFirst = append(leafFirst, Frame{Address: uint64(0x1000 + rng.Intn(40)*16), Category: CategoryUser})
		}
		s := th.InternStack(leafFirst)
		th.Samples.Add(s, int64(i)*1000, 1000)
		want = append(want, stackFrames(th, s))
	}
	th.Markers = []Marker{{Name: "old", Start: 10}, {Name: "new", Start: 4_000_000}}
	stacksBefore, framesBefore := th.Stacks.Len(), th.Frames.Len()

	if n := th.DropBefore(3_000_000); n != 3000 {
		t.Fatalf("dropped %d samples, want 3000", n)
	}
	th.Compact()
	if th.Samples.Len() != 2000 || th.Samples.Time[0] != 3_000_000 {
		t.Fatalf("kept %d samples starting at %d", th.Samples.Len(), th.Samples.Time[0])
	}
	if len(th.Markers) != 1 || th.Markers[0].Name != "new" {
		t.Errorf("markers after drop: %+v", th.Markers)
	}
	if th.Stacks.Len() >= stacksBefore || th.Frames.Len() > framesBefore {
		t.Errorf("compaction kept %d/%d stacks and %d/%d frames", th.Stacks.Len(), stacksBefore, th.Frames.Len(), framesBefore)
	}
	for i, s := range th.Samples.Stack {
		if got := stackFrames(th, s); !reflect.DeepEqual(got, want[3000+i]) {
			t.Fatalf("sample %d: stack %v after compaction, want %v", i, got, want[3000+i])
		}
	}
	// Prefixes still come before the stacks that extend them, and interning
	// keeps working on the compacted tables.
	for i, p := range th.Stacks.Prefix {
		if p >= int32(i) {
			t.Fatalf("stack %d has prefix %d", i, p)
		}
	}
	s := th.Samples.Stack[0]
	if got := th.InternStack(stackFrames(th, s)); got != s {
		t.Errorf("re-interning an existing stack gave %d, want %d", got, s)
	}
}
