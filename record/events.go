package record

import (
	"fmt"
	"strings"

	"github.com/gprof-dev/gprof/attach"
	"github.com/gprof-dev/gprof/event"
	"github.com/gprof-dev/gprof/profile"
)

// Events beyond CPU time: a recording of several events (page faults,
// tracepoint hits, probes...) gets each event's samples in a table of its
// own per thread (profile.Thread.Events), with the thread's stacks; the
// first event's samples are the thread's samples, as in a recording of
// one event. A sample of an event that counts something other than CPU
// time weighs its period: the occurrences it stands for. A tracepoint's
// or probe's hit is also an instant marker on its thread, with the hit's
// fields and its stack as the marker's cause.

// EventInfo describes one of a recording's events to the builder, in the
// order of event.Sample.Event.
type EventInfo struct {
	Name string
	// Counting says the event counts something other than CPU time: its
	// samples weigh their period and carry no CPU time.
	Counting bool
	// Traced says its hits carry fields (a tracepoint or probe): each
	// becomes a marker.
	Traced bool
}

// maxTraceMarkers bounds the markers made of tracepoint hits: past it,
// hits are samples only (a marker's payload costs a few hundred bytes).
const maxTraceMarkers = 200000

// eventOf returns what the builder knows of event i.
func (b *builder) eventOf(i int) EventInfo {
	if i >= 0 && i < len(b.events) {
		return b.events[i]
	}
	if i == 0 {
		return EventInfo{}
	}
	return EventInfo{Name: fmt.Sprintf("event %d", i), Counting: true}
}

// isEventSample reports whether s goes to eventSample rather than being a
// sample of CPU time.
func (b *builder) isEventSample(s *event.Sample) bool {
	return !s.Switch && (s.Event != 0 || b.eventOf(0).Counting)
}

// eventSample adds a sample of a counting event, or of any event but the
// first, with its stack (frames, leaf first).
func (b *builder) eventSample(th *profile.Thread, s *event.Sample, frames []profile.Frame) {
	ev := b.eventOf(s.Event)
	now := b.rel(s.Time)
	stack := th.InternStack(frames)
	t := &th.Samples
	if s.Event != 0 {
		t = th.EventTable(ev.Name)
	}
	w := int64(1)
	if ev.Counting && s.Period > 0 {
		w = int64(min(s.Period, 1<<31-1))
	}
	cpu := s.CPUDelta
	if ev.Counting {
		cpu = -1
	}
	addWeighted(t, stack, now, cpu, int32(w))
	if ev.Traced {
		if b.traceMarkers < maxTraceMarkers {
			b.traceMarkers++
			th.Markers = append(th.Markers, profile.Marker{
				Name: ev.Name, Start: now, End: now, Phase: profile.PhaseInstant, Category: profile.CategoryOther,
				Data:  map[string]any{"type": profile.TracepointMarkerType, "fields": string(s.Fields)},
				Cause: stack + 1,
			})
		} else {
			b.traceUnmarked++
		}
	}
	b.bound.after(b, now)
}

// addWeighted appends a sample of weight w to t, giving t a weight column
// (every earlier sample weighing 1) when w is not 1.
func addWeighted(t *profile.SampleTable, stack int32, time, cpu int64, w int32) {
	if w != 1 && t.Weight == nil {
		t.Weight = make([]int32, len(t.Stack), cap(t.Stack))
		for i := range t.Weight {
			t.Weight[i] = 1
		}
	}
	t.Add(stack, time, cpu)
	if t.Weight != nil {
		t.Weight[len(t.Weight)-1] = w
	}
}

// eventInfos describes the events of specs to the builder.
func eventInfos(specs []attach.EventSpec) []EventInfo {
	var out []EventInfo
	for _, s := range specs {
		out = append(out, EventInfo{Name: s.Name, Counting: s.Counting(), Traced: s.Traced()})
	}
	return out
}

// finishEvents notes the events in the profile's metadata, adds the IPC
// counters where cycles and instructions were both sampled, and tells of
// tracepoint hits that got no marker.
func (b *builder) finishEvents(notice func(string)) {
	if len(b.events) > 1 {
		names := make([]string, len(b.events))
		for i, ev := range b.events {
			names[i] = ev.Name
		}
		b.profile.Meta.Extra["events"] = strings.Join(names, ",")
	}
	if len(b.events) > 0 {
		b.profile.Meta.Extra["event"] = b.events[0].Name
	}
	b.ipcCounters()
	if b.traceUnmarked > 0 && notice != nil {
		notice(fmt.Sprintf("%d tracepoint hits past the first %d have no marker of their own; their samples are all in the profile", b.traceUnmarked, maxTraceMarkers))
	}
}
