package profile

// OverheadStats summarizes an Overhead as the Gecko profiler's
// profilerOverhead.statistics does, in µs (overheadPercentage is a
// fraction). Locking and cleaning have no counterpart in gprof and are 0.
type OverheadStats struct {
	MaxCleaning, MaxCounter, MaxInterval, MaxLockings, MaxOverhead, MaxThread       float64
	MeanCleaning, MeanCounter, MeanInterval, MeanLockings, MeanOverhead, MeanThread float64
	MinCleaning, MinCounter, MinInterval, MinLockings, MinOverhead, MinThread       float64
	OverheadDurations, OverheadPercentage, ProfiledDuration                         float64
	SamplingCount                                                                   int
}

// Stats computes the statistics of o; ok is false when it has no entry.
func (o *Overhead) Stats() (s OverheadStats, ok bool) {
	if o == nil || len(o.Time) == 0 {
		return s, false
	}
	n := len(o.Time)
	type agg struct{ min, max, sum float64 }
	add := func(a *agg, v float64, first bool) {
		if first || v < a.min {
			a.min = v
		}
		if first || v > a.max {
			a.max = v
		}
		a.sum += v
	}
	var over, counters, threads, interval agg
	for i := 0; i < n; i++ {
		c, t := float64(o.Counters[i])/1e3, float64(o.Threads[i])/1e3
		add(&counters, c, i == 0)
		add(&threads, t, i == 0)
		add(&over, c+t, i == 0)
		if i > 0 {
			add(&interval, float64(o.Time[i]-o.Time[i-1])/1e3, i == 1)
		}
	}
	s.SamplingCount = n
	s.MinCounter, s.MaxCounter, s.MeanCounter = counters.min, counters.max, counters.sum/float64(n)
	s.MinThread, s.MaxThread, s.MeanThread = threads.min, threads.max, threads.sum/float64(n)
	s.MinOverhead, s.MaxOverhead, s.MeanOverhead = over.min, over.max, over.sum/float64(n)
	if n > 1 {
		s.MinInterval, s.MaxInterval, s.MeanInterval = interval.min, interval.max, interval.sum/float64(n-1)
	}
	s.OverheadDurations = over.sum
	s.ProfiledDuration = float64(o.Time[n-1]-o.Time[0]) / 1e3
	if s.ProfiledDuration > 0 {
		s.OverheadPercentage = s.OverheadDurations / s.ProfiledDuration
	}
	return s, true
}

// JSON returns the statistics as the front-end's ProfilerOverheadStats
// object.
func (s OverheadStats) JSON() map[string]any {
	return map[string]any{
		"maxCleaning": s.MaxCleaning, "maxCounter": s.MaxCounter, "maxInterval": s.MaxInterval,
		"maxLockings": s.MaxLockings, "maxOverhead": s.MaxOverhead, "maxThread": s.MaxThread,
		"meanCleaning": s.MeanCleaning, "meanCounter": s.MeanCounter, "meanInterval": s.MeanInterval,
		"meanLockings": s.MeanLockings, "meanOverhead": s.MeanOverhead, "meanThread": s.MeanThread,
		"minCleaning": s.MinCleaning, "minCounter": s.MinCounter, "minInterval": s.MinInterval,
		"minLockings": s.MinLockings, "minOverhead": s.MinOverhead, "minThread": s.MinThread,
		"overheadDurations": s.OverheadDurations, "overheadPercentage": s.OverheadPercentage,
		"profiledDuration": s.ProfiledDuration, "samplingCount": s.SamplingCount,
	}
}
