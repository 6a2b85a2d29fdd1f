package record

import (
	"fmt"
	"time"

	"github.com/gprof-dev/gprof/profile"
)

// rateCheck measures how many of the samples the rate asks for a backend
// delivered: a busy thread should have about one per interval of its CPU
// time (the sum of its samples' CPU deltas, which also counts the time of
// samples not taken). A backend that falls short (slow stops, a CPU cap,
// too many threads) says nothing of it by itself; the profile would just
// look thinner than its header suggests.
type rateCheck struct {
	threads map[*profile.Thread]*threadRate
	order   []*profile.Thread
}

type threadRate struct {
	pid, tid int
	samples  int64
	cpu      int64 // ns
}

// busyIntervals is how many intervals of CPU time make a thread busy
// enough to judge: at 50 the count of a thread sampled by its own CPU
// clock is exact to a sample or two, and 0.8 is far out of reach of
// chance for backends that sample at random moments.
const busyIntervals = 50

func (r *rateCheck) add(th *profile.Thread, pid, tid int, cpuDelta int64) {
	if cpuDelta < 0 {
		return // unknown (files of other tools)
	}
	if r.threads == nil {
		r.threads = map[*profile.Thread]*threadRate{}
	}
	tr := r.threads[th]
	if tr == nil {
		tr = &threadRate{pid: pid, tid: tid}
		r.threads[th] = tr
		r.order = append(r.order, th)
	}
	tr.samples++
	tr.cpu += cpuDelta
}

// sampleRate is what rateCheck found.
type sampleRate struct {
	// Ratio is the busy threads' samples over the samples their CPU time
	// asks for at the interval; Min the lowest one thread had (Worst).
	Ratio, Min float64
	Worst      *profile.Thread
	WorstRate  threadRate
	Busy       int // threads busy enough to judge; 0: no figure
}

func (r *rateCheck) result(interval time.Duration) sampleRate {
	var out sampleRate
	if interval <= 0 {
		return out
	}
	var got, want float64
	for _, th := range r.order {
		tr := r.threads[th]
		w := float64(tr.cpu) / float64(interval)
		if w < busyIntervals {
			continue
		}
		ratio := float64(tr.samples) / w
		if out.Busy == 0 || ratio < out.Min {
			out.Min, out.Worst, out.WorstRate = ratio, th, *tr
		}
		out.Busy++
		got += float64(tr.samples)
		want += w
	}
	if out.Busy > 0 {
		out.Ratio = got / want
	}
	return out
}

// shortfallLimit is the share of the samples asked for below which gprof
// says so.
const shortfallLimit = 0.8

// shortfall returns the one-line notice for a rate that fell short, or "".
func (sr sampleRate) shortfall(backend string, interval time.Duration, advice string) string {
	if sr.Busy == 0 || sr.Min >= shortfallLimit {
		return ""
	}
	if advice == "" {
		advice = "lower the rate (-r) to one the backend can keep up with"
	}
	name := ""
	if sr.Worst != nil && sr.Worst.Name != "" {
		name = " (" + sr.Worst.Name + ")"
	}
	return fmt.Sprintf("the %s backend took %.2f of the samples %.0f Hz asks for busy threads (thread %d%s: %d for %.2f s of CPU, %.2f); %s",
		backend, sr.Ratio, float64(time.Second)/float64(interval), sr.WorstRate.tid, name,
		sr.WorstRate.samples, float64(sr.WorstRate.cpu)/1e9, sr.Min, advice)
}
