package profile

import "sort"

// DropBefore removes the samples and markers of th that are older than t
// (ns since Meta.StartTime) and returns how many samples it removed. The
// kept data is copied into fresh slices so the old arrays can be freed.
func (th *Thread) DropBefore(t int64) int {
	i := th.Samples.dropBefore(t)
	for k := range th.Events {
		th.Events[k].Samples.dropBefore(t)
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

// dropBefore removes the samples older than t and returns how many.
func (s *SampleTable) dropBefore(t int64) int {
	i := sort.Search(len(s.Time), func(i int) bool { return s.Time[i] >= t })
	if i > 0 {
		s.Stack = append([]int32(nil), s.Stack[i:]...)
		s.Time = append([]int64(nil), s.Time[i:]...)
		if s.CPUDelta != nil {
			s.CPUDelta = append([]int64(nil), s.CPUDelta[i:]...)
		}
		if s.Weight != nil {
			s.Weight = append([]int32(nil), s.Weight[i:]...)
		}
	}
	return i
}

// Compact drops frames and stacks that no sample uses any more (directly or
// as a prefix) and renumbers the rest, keeping their relative order so
// prefixes still come before the stacks that extend them.
func (th *Thread) Compact() {
	n := th.Stacks.Len()
	used := make([]bool, n)
	mark := func(s int32) {
		for s != NoStack && !used[s] {
			used[s] = true
			s = th.Stacks.Prefix[s]
		}
	}
	for _, s := range th.Samples.Stack {
		mark(s)
	}
	for k := range th.Events {
		for _, s := range th.Events[k].Samples.Stack {
			mark(s)
		}
	}
	for _, m := range th.Markers {
		if m.Cause > 0 {
			mark(m.Cause - 1)
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
	renumber := func(stacks []int32) {
		for i, s := range stacks {
			if s != NoStack {
				stacks[i] = newStack[s]
			}
		}
	}
	renumber(th.Samples.Stack)
	for k := range th.Events {
		renumber(th.Events[k].Samples.Stack)
	}
	for i := range th.Markers {
		if c := th.Markers[i].Cause; c > 0 {
			th.Markers[i].Cause = newStack[c-1] + 1
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
	n += int64(len(th.Samples.Weight)) * 4
	for k := range th.Events {
		s := &th.Events[k].Samples
		n += int64(s.Len())*perSample + int64(len(s.Weight))*4
	}
	return n
}
