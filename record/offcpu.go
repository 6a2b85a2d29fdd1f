package record

import (
	"time"

	"github.com/gprof-dev/gprof/event"
	"github.com/gprof-dev/gprof/profile"
)

// Off-CPU sampling: a backend with attach.Options.OffCPU reports when each
// thread leaves and returns to a CPU (event.Switch) and the stack it left
// in (event.Sample with Switch set). The builder turns each stretch off
// the CPU into samples at the recording interval with that stack, a CPU
// delta of zero, and a leaf label whose category says blocked or
// preempted, so that every thread has a sample per interval of its life,
// as in the Gecko sampler's model.
//
// Off time is sampled on a running credit per thread: a stretch shorter
// than the interval adds to the credit, and a sample is taken each time
// the credit reaches the interval. Many short waits thus weigh what they
// last in total, and the samples of a thread (clock samples per interval
// of CPU, off-CPU samples per interval off it) add up to its lifetime.

// Labels of the leaf frame of off-CPU samples.
const (
	BlockedLabel   = "[blocked]"
	PreemptedLabel = "[preempted]"
)

// offState is one thread's off-CPU bookkeeping.
// Stacks are kept as frames, not stack indexes, because a bounded
// recording compacts stack tables (bound.dropBefore).
type offState struct {
	pr         *profile.Process
	pending    []profile.Frame // stack of the latest switch-out sample, leaf first
	hasPending bool
	offAt      int64           // monotonic ns it went off the CPU; -1 while on it
	frames     []profile.Frame // stack of its off-CPU samples while off
	wchan      string          // where it sleeps, when the backend said
	credit     int64           // off time not yet sampled, ns
}

func (b *builder) offOf(pr *proc, th *profile.Thread) *offState {
	st := b.off[th]
	if st == nil {
		if b.off == nil {
			b.off = map[*profile.Thread]*offState{}
		}
		st = &offState{pr: pr.p, offAt: -1}
		b.off[th] = st
	}
	return st
}

// switchSample keeps the stack of a switch-out sample for the Switch event
// that follows it.
func (b *builder) switchSample(pr *proc, th *profile.Thread, frames []profile.Frame) {
	st := b.offOf(pr, th)
	st.pending = append(st.pending[:0], frames...)
	st.hasPending = true
}

func (b *builder) contextSwitch(e *event.Switch) {
	pr := b.procs[e.Pid]
	if pr != nil {
		b.par.set(pr, e.Tid, !e.Out, e.Time)
	}
	if b.switchesOnly {
		return
	}
	b.offCPU = true
	if pr == nil {
		return
	}
	th := pr.threads[e.Tid]
	if th == nil {
		return
	}
	st := b.offOf(pr, th)
	if !e.Out {
		b.flushOff(th, st, e.Time)
		return
	}
	if st.offAt >= 0 {
		return // out twice: keep the first
	}
	label := profile.Frame{Label: BlockedLabel, Category: profile.CategoryIdle}
	if e.Preempt {
		label = profile.Frame{Label: PreemptedLabel, Category: profile.CategoryPreempted}
	}
	st.frames = append(st.frames[:0], label)
	b.switches++
	if !st.hasPending {
		b.unstacked++
	}
	if st.hasPending {
		st.frames = append(st.frames, st.pending...)
	} else if n := th.Samples.Len(); n > 0 {
		// No stack taken at the switch (not permitted): the thread's
		// latest stack is the best guess of where it stopped.
		for s := th.Samples.Stack[n-1]; s != profile.NoStack; s = th.Stacks.Prefix[s] {
			f := th.Frames.Frames[th.Stacks.Frame[s]]
			if len(st.frames) == 1 && (f.Label == BlockedLabel || f.Label == PreemptedLabel || f.Label == profile.KernelLabel) {
				continue // the leaf of an earlier off-CPU sample, or kernel mode
			}
			st.frames = append(st.frames, f)
		}
	}
	st.offAt = e.Time
	st.wchan = e.Wchan
	st.hasPending = false
}

// flushOff samples th's stretch off the CPU up to monotonic time t.
func (b *builder) flushOff(th *profile.Thread, st *offState, t int64) {
	if st == nil || st.offAt < 0 || t < st.offAt {
		return
	}
	iv := int64(b.profile.Meta.Interval)
	if iv <= 0 {
		iv = 1e6
	}
	total := st.credit + t - st.offAt
	if total >= iv {
		stack := th.InternStack(st.frames)
		now := int64(0)
		for k := int64(1); k*iv <= total; k++ {
			now = b.rel(st.offAt + k*iv - st.credit)
			th.Samples.Add(stack, now, 0)
			b.samples++
			b.offSamples++
		}
		b.bound.after(b, now)
	}
	st.credit = total % iv
	if t-st.offAt >= max(waitMarkerIntervals*iv, int64(time.Millisecond)) {
		b.waitMarker(th, st, t)
	}
	st.offAt = -1
}

// waitMarkerIntervals: waits of at least this many intervals get a marker.
const waitMarkerIntervals = 10

// waitMarker marks th's wait that ends at monotonic t. Its payload names
// the functions once names are known (nameWaits).
func (b *builder) waitMarker(th *profile.Thread, st *offState, t int64) {
	name, cat := "Blocked", profile.CategoryIdle
	if len(st.frames) > 0 && st.frames[0].Label == PreemptedLabel {
		name, cat = "Preempted", profile.CategoryPreempted
	}
	data := map[string]any{"type": profile.OffCPUMarkerType}
	th.Markers = append(th.Markers, profile.Marker{
		Name: name, Start: b.rel(st.offAt), End: b.rel(t), Phase: profile.PhaseInterval, Category: cat,
		Data: data,
	})
	var frames []profile.Frame
	if len(st.frames) > 1 {
		frames = append(frames, st.frames[1:]...)
	}
	b.waits = append(b.waits, waitRef{pr: st.pr, data: data, blocked: name == "Blocked", frames: frames, wchan: st.wchan})
}

// flushAllOff samples every thread still off the CPU up to monotonic t,
// as recording stops.
func (b *builder) flushAllOff(t int64) {
	for th, st := range b.off {
		end := t
		if th.End >= 0 {
			end = min(end, b.t0+th.End)
		}
		b.flushOff(th, st, end)
	}
}
