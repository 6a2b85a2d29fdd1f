package report

import (
	"slices"

	"github.com/gprof-dev/gprof/profile"
)

// Filter selects threads. Each non-empty list must match (a thread is kept
// when its pid is one of Pids, and its tid one of Tids, and...); names
// match exactly or as a glob with * (Match).
type Filter struct {
	Pids, Tids         []int
	Threads, Processes []string
}

// Empty reports whether f keeps everything.
func (f Filter) Empty() bool {
	return len(f.Pids) == 0 && len(f.Tids) == 0 && len(f.Threads) == 0 && len(f.Processes) == 0
}

// Apply returns a profile holding only the threads f keeps, and the
// processes that still have threads. It shares everything else with p.
func (f Filter) Apply(p *profile.Profile) *profile.Profile {
	if f.Empty() {
		return p
	}
	out := *p
	out.Processes = nil
	for _, pr := range p.Processes {
		if pr == nil || len(f.Pids) > 0 && !slices.Contains(f.Pids, pr.Pid) || len(f.Processes) > 0 && !matchAny(f.Processes, pr.Name) {
			continue
		}
		cp := *pr
		cp.Threads = nil
		for _, th := range pr.Threads {
			if th == nil || len(f.Tids) > 0 && !slices.Contains(f.Tids, th.Tid) || len(f.Threads) > 0 && !matchAny(f.Threads, threadLabel(pr, th)) {
				continue
			}
			cp.Threads = append(cp.Threads, th)
		}
		if len(cp.Threads) > 0 {
			out.Processes = append(out.Processes, &cp)
		}
	}
	return &out
}

func matchAny(patterns []string, name string) bool {
	for _, p := range patterns {
		if Match(p, name) {
			return true
		}
	}
	return false
}
