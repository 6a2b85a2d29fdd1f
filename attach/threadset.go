package attach

import "slices"

// Helpers the suspend-style samplers (macOS mach, Windows suspend) share:
// they keep their threads in a map and report them in thread id order, so
// that events, and the profiles built from them, do not depend on map order.

// byTid returns the threads of m ordered by thread id.
func byTid[K comparable, T any](m map[K]*T, tid func(*T) int) []*T {
	ths := make([]*T, 0, len(m))
	for _, th := range m {
		ths = append(ths, th)
	}
	slices.SortFunc(ths, func(a, b *T) int { return tid(a) - tid(b) })
	return ths
}

// emitGone reports the exit of every thread in tids but the main one, then
// of the process (its main thread, whose tid is pid).
func emitGone(emit func(Event), now int64, pid int, tids []int) {
	for _, tid := range tids {
		if tid != pid {
			emit(&Exit{Time: now, Pid: pid, Tid: tid})
		}
	}
	emit(&Exit{Time: now, Pid: pid, Tid: pid})
}
