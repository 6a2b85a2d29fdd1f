package report

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/gprof-dev/gprof/profile"
)

// Events beyond CPU time, and markers: selections that make a profile
// whose threads' samples are those a summary should count, so that every
// view (the summary, the tree, folded stacks) works on them unchanged.

// Events lists the events a profile has samples of: the first event
// (Meta.Extra["event"], the threads' own samples) first, then the others
// in the order the threads hold them.
func Events(p *profile.Profile) []string {
	var out []string
	if e := p.Meta.Extra["event"]; e != "" {
		out = append(out, e)
	}
	for _, pr := range p.Processes {
		if pr == nil {
			continue
		}
		for _, th := range pr.Threads {
			if th == nil {
				continue
			}
			for _, ev := range th.Events {
				if !slices.Contains(out, ev.Event) {
					out = append(out, ev.Event)
				}
			}
		}
	}
	return out
}

// SelectEvent returns a profile whose threads' samples are those of event
// name: the threads' own when name is the profile's first event, else
// their table of that event (a thread without one has no samples). Its
// Meta.Extra["event"] is name. It shares everything else with p.
func SelectEvent(p *profile.Profile, name string) (*profile.Profile, error) {
	evs := Events(p)
	if !slices.Contains(evs, name) {
		if len(evs) == 0 {
			return nil, fmt.Errorf("the profile names no event, so it has no %s samples", name)
		}
		return nil, fmt.Errorf("the profile has no %s samples: its events are %s", name, strings.Join(evs, ", "))
	}
	if name == p.Meta.Extra["event"] {
		return p, nil
	}
	out := *p
	out.Meta.Extra = map[string]string{}
	for k, v := range p.Meta.Extra {
		out.Meta.Extra[k] = v
	}
	out.Meta.Extra["event"] = name
	out.Processes = mapThreads(p, func(_ *profile.Process, th *profile.Thread) *profile.Thread {
		t := *th
		t.Samples = profile.SampleTable{}
		t.Events = nil
		for _, ev := range th.Events {
			if ev.Event == name {
				t.Samples = ev.Samples
			}
		}
		return &t
	})
	return &out, nil
}

// mapThreads returns copies of p's processes whose threads are f's
// copies of theirs (nil entries dropped), for the views that rewrite
// samples and leave the rest of a profile as it is.
func mapThreads(p *profile.Profile, f func(*profile.Process, *profile.Thread) *profile.Thread) []*profile.Process {
	var out []*profile.Process
	for _, pr := range p.Processes {
		if pr == nil {
			continue
		}
		cp := *pr
		cp.Threads = nil
		for _, th := range pr.Threads {
			if th != nil {
				cp.Threads = append(cp.Threads, f(pr, th))
			}
		}
		out = append(out, &cp)
	}
	return out
}

// span is a marker's time range.
type span struct{ start, end int64 }

// DuringMarker returns a profile holding only the samples (of every
// event) taken while a marker named name (a * glob) was open on a thread
// of the same process: interval markers, as programs mark their phases
// (a marker file's lines, say). It reports how many markers matched, and
// an error naming the profile's interval markers when none did.
func DuringMarker(p *profile.Profile, name string) (*profile.Profile, int, error) {
	spans := map[int][]span{} // by pid
	seen := map[string]bool{}
	n := 0
	for _, pr := range p.Processes {
		if pr == nil {
			continue
		}
		for _, th := range pr.Threads {
			if th == nil {
				continue
			}
			for _, m := range th.Markers {
				if m.Phase != profile.PhaseInterval {
					continue
				}
				seen[m.Name] = true
				if Match(name, m.Name) {
					spans[pr.Pid] = append(spans[pr.Pid], span{m.Start, m.End})
					n++
				}
			}
		}
	}
	if n == 0 {
		if len(seen) == 0 {
			return nil, 0, fmt.Errorf("no marker named %q: the profile has no interval markers (a program marks its phases in a marker file, see docs/events.md)", name)
		}
		names := make([]string, 0, len(seen))
		for k := range seen {
			names = append(names, k)
		}
		sort.Strings(names)
		if len(names) > 10 {
			names = append(names[:10], "...")
		}
		return nil, 0, fmt.Errorf("no marker named %q: the profile's interval markers are %s", name, strings.Join(names, ", "))
	}
	for pid, s := range spans {
		spans[pid] = merge(s)
	}
	out := *p
	out.Processes = mapThreads(p, func(pr *profile.Process, th *profile.Thread) *profile.Thread {
		t := *th
		t.Samples = within(th.Samples, spans[pr.Pid])
		t.Events = nil
		for _, ev := range th.Events {
			t.Events = append(t.Events, profile.EventSamples{Event: ev.Event, Samples: within(ev.Samples, spans[pr.Pid])})
		}
		return &t
	})
	return &out, n, nil
}

// merge sorts spans and joins those that overlap.
func merge(s []span) []span {
	sort.Slice(s, func(i, j int) bool { return s[i].start < s[j].start })
	out := s[:0]
	for _, x := range s {
		if n := len(out); n > 0 && x.start <= out[n-1].end {
			out[n-1].end = max(out[n-1].end, x.end)
			continue
		}
		out = append(out, x)
	}
	return out
}

// within returns the samples of t whose time lies in one of spans
// (sorted, disjoint), ends included.
func within(t profile.SampleTable, spans []span) profile.SampleTable {
	var out profile.SampleTable
	if t.Weight != nil {
		out.Weight = []int32{}
	}
	for i, tm := range t.Time {
		k := sort.Search(len(spans), func(k int) bool { return spans[k].end >= tm })
		if k == len(spans) || spans[k].start > tm {
			continue
		}
		cpu := int64(-1)
		if i < len(t.CPUDelta) {
			cpu = t.CPUDelta[i]
		}
		out.Add(t.Stack[i], tm, cpu)
		if t.Weight != nil {
			out.Weight[len(out.Weight)-1] = t.Weight[i]
		}
	}
	return out
}
