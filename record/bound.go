package record

import (
	"runtime/debug"

	"github.com/gprof-dev/gprof/profile"
)

// modelShare is the part of a --max-memory budget the profile model itself
// may use, by its own estimate. The rest is headroom the estimate does not
// see: slices grow by doubling (up to 2x), and the garbage collector lets
// the heap reach about twice what is live before collecting.
const modelShare = 3

// A bound keeps a long recording's memory in check, like the Gecko
// profiler's chunked buffer: past a size or age limit the oldest samples
// are discarded in chunks, and the stacks only they used are freed.
type bound struct {
	maxBytes int64 // 0: no size limit
	keep     int64 // ns; 0: no age limit

	sinceCheck int
	lastCheck  int64
	// discardedBefore is the time (ns since start) before which data was
	// discarded; 0 when nothing was.
	discardedBefore int64
	discarded       uint64
}

// Checks walk every thread, so they happen once per chunk of samples or
// once per checkInterval of time, whichever comes first.
const (
	checkEvery    = 8192
	checkInterval = 250e6 // ns
)

// after is called once per sample at time now (ns since start).
func (bd *bound) after(b *builder, now int64) {
	if bd.maxBytes == 0 && bd.keep == 0 {
		return
	}
	bd.sinceCheck++
	if bd.sinceCheck < checkEvery && now-bd.lastCheck < checkInterval {
		return
	}
	bd.sinceCheck, bd.lastCheck = 0, now

	if bd.keep > 0 {
		// Drop in chunks of an eighth of the window, not per sample.
		if cut := now - bd.keep; cut-bd.discardedBefore > bd.keep/8 {
			bd.dropBefore(b, cut)
		}
	}
	if bd.maxBytes > 0 {
		dropped := false
		for i := 0; i < 8 && bd.size(b) > bd.maxBytes/modelShare; i++ {
			// Discard the oldest quarter of what is kept, then look again.
			bd.dropBefore(b, bd.discardedBefore+(now-bd.discardedBefore)/4)
			dropped = true
		}
		if dropped {
			// Give the freed memory back now, not minutes later: the
			// point of the bound is the process's footprint. Drops are
			// rare (each frees a quarter of the data), so this is cheap.
			debug.FreeOSMemory()
		}
	}
}

func (bd *bound) size(b *builder) int64 {
	var n int64
	for _, pr := range b.all {
		for _, th := range pr.p.Threads {
			n += th.SizeEstimate()
		}
	}
	return n
}

func (bd *bound) dropBefore(b *builder, cut int64) {
	if cut <= bd.discardedBefore {
		return
	}
	bd.discardedBefore = cut
	for _, pr := range b.all {
		for _, th := range pr.p.Threads {
			if n := th.DropBefore(cut); n > 0 {
				bd.discarded += uint64(n)
				th.Compact()
				compactDone(th)
			}
		}
	}
}

// compactDone exists so tests can observe compaction; it does nothing.
var compactDone = func(*profile.Thread) {}
