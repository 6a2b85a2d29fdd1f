package profile

import "sort"

// DropBefore removes the samples and markers of th that are older than t
// (ns since Meta.StartTime) and returns how many samples it removed. The
// kept data is copied into fresh slices so the old arrays can be freed.
func (th *Thread) DropBefore(t int64) int {
	s := &th.Samples
	i := sort.Search(len(s.Time), func(i int) bool { return s.Time[i] >= t })
	if i > 0 {
		s.Stack = append([]int32(nil), s.Stack[i:]...)
		s.Time = append([]int64(nil), s.Time[i:]...)
		s.CPUDelta = append([]int64(nil), s.CPUDelta[i:]...)
		if s.Weight != nil {
			s.Weight = append([]int32(nil), s.Weight[i:]...)
		}
	}
	kept := th.Markers[:0]
	for _, m := range th.Markers {
		end := m.Start
		if m.End > end {
			end = m.End
		}
		if end >= t {
			kept = append(kept, m)
		}
	}
	th.Markers = kept
	return i
}

// Compact drops frames and stacks that no sample uses any more (directly or
// as a prefix) and renumbers the rest, keeping their relative order so
// prefixes still come before the stacks that extend them.
func (th *Thread) Compact() {
	n := th.Stacks.Len()
	used := make([]bool, n)
	for _, s := range th.Samples.Stack {
		for s != NoStack && !used[s] {
			used[s] = true
			s = th.Stacks.Prefix[s]
		}
	}
	frameUsed := make([]bool, th.Frames.Len())
	newStack := make([]int32, n)
	var st StackTable
	for i := 0; i < n; i++ {
		if !used[i] {
			newStack[i] = NoStack
			continue
		}
		frameUsed[th.Stacks.Frame[i]] = true
	}
	newFrame := make([]int32, th.Frames.Len())
	var ft FrameTable
	for i, f := range th.Frames.Frames {
		if frameUsed[i] {
			newFrame[i] = int32(len(ft.Frames))
			ft.Frames = append(ft.Frames, f)
		}
	}
	for i := 0; i < n; i++ {
		if !used[i] {
			continue
		}
		prefix := th.Stacks.Prefix[i]
		if prefix != NoStack {
			prefix = newStack[prefix]
		}
		newStack[i] = int32(len(st.Frame))
		st.Prefix = append(st.Prefix, prefix)
		st.Frame = append(st.Frame, newFrame[th.Stacks.Frame[i]])
	}
	for i, s := range th.Samples.Stack {
		if s != NoStack {
			th.Samples.Stack[i] = newStack[s]
		}
	}
	th.Stacks, th.Frames = st, ft
}

// SizeEstimate is roughly how many bytes th's samples, stacks and frames
// hold in memory, index maps included. Recorders use it to bound memory.
func (th *Thread) SizeEstimate() int64 {
	const (
		perSample = 4 + 8 + 8      // stack, time, CPU delta
		perStack  = 4 + 4 + 8 + 16 // prefix, frame, map key and value with overhead
		perFrame  = 40 + 48        // Frame, map entry
	)
	n := int64(th.Samples.Len())*perSample + int64(th.Stacks.Len())*perStack + int64(th.Frames.Len())*perFrame
	return n + int64(len(th.Samples.Weight))*4
}
