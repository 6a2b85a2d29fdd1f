package record

import (
	"fmt"

	"github.com/gprof-dev/gprof/event"
	"github.com/gprof-dev/gprof/profile"
)

// ReplayOptions configure Replay.
type ReplayOptions struct {
	// Meta describes the recording; Replay sets its Duration.
	Meta profile.Meta
	// Start and End bound the events' times: time zero and when recording
	// stopped, on the events' clock.
	Start, End int64
	// Unwind unwinds samples that carry registers and a stack copy with
	// gprof's unwinder, from the binaries on disk. Without it their frames
	// are what the recorder sent.
	Unwind bool
	// Kernel adds the running kernel's symbols for kernel frames; only
	// right when the events were recorded on this boot.
	Kernel     bool
	Symbolize  bool
	SymbolDirs []string
	// Notice receives one-line notices; nil discards them.
	Notice func(string)
	// Label, when set, names user frames of process pid that JIT-compiled
	// code holds, as the recording's runtime events told (an ETL trace's
	// CLR method events): they become labels, not addresses.
	Label func(pid int, addr uint64) (string, bool)
}

// Replay builds a profile from events recorded earlier (a perf.data file,
// an ETL trace)
// the way Run builds one from a live recording: the same builder, user
// unwinding, library identification and symbolication. Events must be in
// time order; their mappings' BuildIDs, when set, must match the binaries
// on disk (else their MapFile, when set, is tried).
func Replay(events []event.Event, opts ReplayOptions) *profile.Profile {
	prof := &profile.Profile{Meta: opts.Meta}
	if prof.Meta.Extra == nil {
		prof.Meta.Extra = map[string]string{}
	}
	b := newBuilder(opts.Start, prof)
	libs := newLibResolver(opts.SymbolDirs)
	defer libs.close()
	b.onMap = libs.observe
	b.label = opts.Label
	if opts.Unwind {
		u := newUserUnwinder()
		u.jit = libs.jitDumpOf
		defer u.close()
		b.unwindUser = u.unwind
	}
	for _, ev := range events {
		b.handle(ev)
	}
	procs := b.finish(opts.End)
	prof.Meta.Duration = b.rel(opts.End)
	prof.Meta.LostEvents = b.lost
	// Off the CPU when the recording has switch events (perf record
	// --switch-events, an ETL trace's context switches), as Run says.
	prof.Meta.Extra[profile.ExtraOffCPU] = fmt.Sprint(b.offCPU)
	for _, pr := range procs {
		pr.p.Libs = libs.libsFor(pr)
		prof.Processes = append(prof.Processes, pr.p)
	}
	if opts.Kernel {
		addKernelLib(prof)
	}
	if opts.Symbolize {
		if _, err := libs.symbolize(prof); err != nil && opts.Notice != nil {
			opts.Notice(fmt.Sprintf("some names could not be resolved: %v", err))
		}
		if msg := unnamedJIT(prof); msg != "" && opts.Notice != nil {
			opts.Notice(msg)
		}
	}
	return prof
}
