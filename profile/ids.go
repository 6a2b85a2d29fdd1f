package profile

import (
	"strconv"
	"strings"
)

// OSProcesses groups p's processes into OS processes: each group is one
// Process that did not start by exec, followed by the images that
// replaced it by exec (Process.Exec), in order. A recording of
// `sh -c perl` that sampled the child before its exec has two Processes
// for the child, sh and then perl, and one OS process.
func (p *Profile) OSProcesses() [][]*Process {
	var groups [][]*Process
	latest := map[int]int{} // pid -> index into groups of its latest OS process
	for _, pr := range p.Processes {
		if pr == nil {
			continue
		}
		if g, ok := latest[pr.Pid]; ok && pr.Exec {
			groups[g] = append(groups[g], pr)
			continue
		}
		latest[pr.Pid] = len(groups)
		groups = append(groups, []*Process{pr})
	}
	return groups
}

// ProcessCount is the number of OS processes in p: what every summary
// calls "processes", however many images exec made of them.
func (p *Profile) ProcessCount() int { return len(p.OSProcesses()) }

// TrackIDs is how p's processes and threads are identified in the Firefox
// Profiler's formats, the same way for Gecko and processed output.
//
// The front-end gives one process track per pid, held by the one thread of
// that pid marked as main (in Gecko, the thread named GeckoMain); every
// other thread of the pid gets a track inside it. Its integrity check wants
// every tid different, across processes too. An exec keeps the pid and the
// main thread's tid, so written naively each image of an exec'ing process
// would be a main thread with the same pid and tid, and all but one would
// have no track at all.
//
// So the images of one OS process share its pid, and with it one process
// track, named after the chain of programs it ran ("sh → perl"). Only the
// last image's main thread is the track's main thread; earlier images'
// main threads become threads of their own inside the track, named as
// recorded, and as their tid is then taken they get "tid.N" strings
// (N = 1, 2, ...), a form the front-end accepts (merged profiles use
// strings too) and gprof's readers read back as the number before the dot.
// A pid the OS reused for a later, unrelated process gets "pid.N" the same
// way. Each image stays a process object of its own in the Gecko output,
// with its own libraries, since an address means something different in
// each image.
type TrackIDs struct {
	procs map[*Process]*OSProcess
	tids  map[*Thread]string
}

// OSProcess is one OS process as written.
type OSProcess struct {
	Pid    string     // the pid as written: "1234", or "1234.1" for a reused pid
	Name   string     // the names of its images, as "sh → perl"
	Images []*Process // in order; more than one when it exec'd
	// Main is the thread that holds the process track: the last image's
	// main thread, or nil when no image has one.
	Main *Thread
}

// Image returns the index of pr among its OS process's images.
func (o *OSProcess) Image(pr *Process) int {
	for i, im := range o.Images {
		if im == pr {
			return i
		}
	}
	return -1
}

// NewTrackIDs assigns p's identities.
func NewTrackIDs(p *Profile) *TrackIDs {
	ids := &TrackIDs{procs: map[*Process]*OSProcess{}, tids: map[*Thread]string{}}
	groups := p.OSProcesses()
	usedPid, usedTid := map[string]bool{}, map[string]bool{}
	oss := make([]*OSProcess, len(groups))
	for i, g := range groups {
		o := &OSProcess{Pid: unique(usedPid, strconv.Itoa(g[0].Pid)), Images: g}
		var names []string
		for _, im := range g {
			if n := len(names); im.Name != "" && (n == 0 || names[n-1] != im.Name) {
				names = append(names, im.Name)
			}
			ids.procs[im] = o
		}
		o.Name = strings.Join(names, " → ")
		for j := len(g) - 1; j >= 0 && o.Main == nil; j-- {
			for _, th := range g[j].Threads {
				if th != nil && th.Main {
					o.Main = th
					break
				}
			}
		}
		oss[i] = o
	}
	// Main threads first, so the threads that hold process tracks keep
	// their real tids.
	for _, o := range oss {
		if o.Main != nil {
			ids.tids[o.Main] = unique(usedTid, strconv.Itoa(o.Main.Tid))
		}
	}
	for _, o := range oss {
		for _, im := range o.Images {
			for _, th := range im.Threads {
				if th != nil && th != o.Main {
					ids.tids[th] = unique(usedTid, strconv.Itoa(th.Tid))
				}
			}
		}
	}
	return ids
}

// unique returns id, or the first free "id.N", and marks it used.
func unique(used map[string]bool, id string) string {
	s := id
	for n := 1; used[s]; n++ {
		s = id + "." + strconv.Itoa(n)
	}
	used[s] = true
	return s
}

// Process returns the OS process pr belongs to.
func (ids *TrackIDs) Process(pr *Process) *OSProcess { return ids.procs[pr] }

// Tid returns th's tid as written: a decimal number, or "tid.N".
func (ids *TrackIDs) Tid(th *Thread) string { return ids.tids[th] }

// ThreadName returns the name to write for th, a thread of image pr. The
// front-end makes the thread named GeckoMain the main thread of its
// process track (in the Gecko format) and labels it with processName,
// numbering homonyms "perl (1/2)" (in both formats), so the thread that
// holds a process track is called that in both outputs, which then show
// the same labels. Other threads keep their recorded names; a thread that
// has none is called "Thread TID" rather than shown blank.
func (ids *TrackIDs) ThreadName(pr *Process, th *Thread) string {
	switch {
	case th == ids.procs[pr].Main:
		return "GeckoMain"
	case th.Name != "":
		return th.Name
	}
	return "Thread " + ids.tids[th]
}

// IsNumber reports whether an id from TrackIDs is a plain decimal number,
// to be written as a JSON number rather than a string.
func IsNumber(id string) bool {
	_, err := strconv.Atoi(id)
	return err == nil
}
