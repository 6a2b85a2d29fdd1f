package profile

import "strconv"

// ExtraOffCPU is the Meta.Extra key in which a recorder says what its
// samples measure: "true" when threads were sampled off the CPU too
// (record --off-cpu), so that every sample is an interval of wall-clock
// time; "false" when they were sampled on it alone, CPU time. It rides in
// Meta.Extra because every format gprof writes keeps Extra (the Gecko
// meta's gprof object, the processed meta's extra entries, pprof's
// comments).
const ExtraOffCPU = "off_cpu"

// OffCPU reports whether p's samples include threads off the CPU, so that
// they measure wall-clock time rather than CPU time.
//
// The recorder's word (ExtraOffCPU) decides when it is there. A profile
// without it (another producer's: perf.data with switch events, an ETL
// trace, pprof; or gprof's own before it said so) is off the CPU when a
// sample's innermost frame is of an off-CPU category ("Idle" or
// "Preempted", found by name). A category merely declared decides
// nothing: a Python recording declares them all.
func (p *Profile) OffCPU() bool {
	if v, err := strconv.ParseBool(p.Meta.Extra[ExtraOffCPU]); err == nil {
		return v
	}
	off := map[Category]bool{}
	for i, c := range p.Meta.Categories {
		if c.Name == "Idle" || c.Name == "Preempted" {
			off[Category(i)] = true
		}
	}
	if len(off) == 0 {
		return false
	}
	for _, pr := range p.Processes {
		if pr == nil {
			continue
		}
		for _, th := range pr.Threads {
			if th != nil && th.hasLeafIn(off) {
				return true
			}
		}
	}
	return false
}

// hasLeafIn reports whether a sample of th has its innermost frame in one
// of cats.
func (th *Thread) hasLeafIn(cats map[Category]bool) bool {
	leaf := make([]bool, len(th.Stacks.Frame))
	for s, f := range th.Stacks.Frame {
		leaf[s] = f >= 0 && int(f) < len(th.Frames.Frames) && cats[th.Frames.Frames[f].Category]
	}
	for _, s := range th.Samples.Stack {
		if s >= 0 && int(s) < len(leaf) && leaf[s] {
			return true
		}
	}
	return false
}
