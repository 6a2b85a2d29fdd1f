package record

import (
	"fmt"
	"strings"

	"github.com/gprof-dev/gprof/profile"
	"github.com/gprof-dev/gprof/symbolize"
)

// unnamedJIT says, in one line, how many samples ran JIT code that no
// perf map or jitdump names (the symbolizer names it by its region,
// "[JIT] node"), and what would name it: the runtime's flag. It returns ""
// when under 1% of the samples, or under 10, did.
func unnamedJIT(p *profile.Profile) string {
	var all, n, most int64
	var top *profile.Process
	procs := 0
	for _, pr := range p.Processes {
		if pr == nil {
			continue
		}
		var k int64
		for _, th := range pr.Threads {
			if th == nil {
				continue
			}
			all += int64(th.Samples.Len())
			k += unnamedJITSamples(p, pr, th)
		}
		if k > 0 {
			procs++
			n += k
			if k > most {
				most, top = k, pr
			}
		}
	}
	if n < 10 || n*100 < all {
		return ""
	}
	runtime := symbolize.JITRuntime(top)
	where := fmt.Sprintf("pid %d", top.Pid)
	if procs > 1 {
		where += fmt.Sprintf(" and %d more processes", procs-1)
	}
	return fmt.Sprintf("%d of %d samples (%.1f%%) ran JIT code with no names, shown as %s%s (%s): %s",
		n, all, 100*float64(n)/float64(all), symbolize.JITPrefix, runtime, where, symbolize.PerfMapHint(runtime))
}

// unnamedJITSamples counts th's samples whose innermost frame is JIT code
// named only by its region.
func unnamedJITSamples(p *profile.Profile, pr *profile.Process, th *profile.Thread) int64 {
	unnamed := make(map[int32]bool) // by frame
	var n int64
	for _, s := range th.Samples.Stack {
		if s < 0 || int(s) >= len(th.Stacks.Frame) {
			continue
		}
		fi := th.Stacks.Frame[s]
		is, seen := unnamed[fi]
		if !seen {
			if int(fi) < len(th.Frames.Frames) {
				if key, rel, ok := pr.Locate(th.Frames.Frames[fi]); ok {
					syms := p.Symbols.LookupFrame(key, rel, false)
					is = len(syms) > 0 && strings.HasPrefix(syms[0].Function, symbolize.JITPrefix)
				}
			}
			unnamed[fi] = is
		}
		if is {
			n++
		}
	}
	return n
}
