package profile

// AdoptEvent makes the samples of other, a thread of its own in a file
// (as the Firefox Profiler's formats hold a thread's samples of an event
// other than the profile's first: see EventSamples), th's samples of event
// name, their stacks interned into th's tables. other's markers are not
// taken. Its stacks must come after their prefixes, as the readers check.
func (th *Thread) AdoptEvent(other *Thread, name string) {
	memo := make([]int32, other.Stacks.Len())
	for i := range memo {
		memo[i] = -2 // not interned yet
	}
	intern := func(s int32) int32 {
		if s < 0 || int(s) >= len(memo) {
			return NoStack
		}
		if memo[s] != -2 {
			return memo[s]
		}
		// Up to the nearest stack interned already, or a root; then
		// down, interning each.
		var path []int32
		t := s
		for ; t != NoStack && memo[t] == -2; t = other.Stacks.Prefix[t] {
			path = append(path, t)
		}
		p := NoStack
		if t != NoStack {
			p = memo[t]
		}
		for i := len(path) - 1; i >= 0; i-- {
			p = th.Stacks.Intern(p, th.Frames.Intern(other.Frames.Frames[other.Stacks.Frame[path[i]]]))
			memo[path[i]] = p
		}
		return p
	}
	sm := other.Samples
	stacks := make([]int32, len(sm.Stack))
	for i, s := range sm.Stack {
		stacks[i] = intern(s)
	}
	sm.Stack = stacks
	th.Events = append(th.Events, EventSamples{Event: name, Samples: sm})
}
