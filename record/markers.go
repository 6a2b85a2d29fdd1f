package record

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/gprof-dev/gprof/event"
	"github.com/gprof-dev/gprof/profile"
)

// Marker files: samply's convention for a program to mark its own phases
// (the tracing-samply crate and reth use it). The program writes lines
// "START END NAME" to a file named marker-PID.txt (or marker-PID-TID.txt),
// START and END being CLOCK_MONOTONIC nanoseconds, the clock of every
// event time on Linux, and maps the file, so that the profiler sees its
// path among the process's mappings (the perf backend asks for mappings of
// data too, and keeps these). The file is read when the process exits, or
// when recording ends; each line becomes an interval marker on the thread
// that mapped the file.

// markerFile is a marker file a process mapped.
type markerFile struct {
	pr   *proc
	tid  int
	path string
	// mapFile reaches the file through the process while it lives, even
	// once removed (see event.Map.MapFile).
	mapFile string
	read    bool
}

// maxMarkerLines bounds what one marker file gives.
const maxMarkerLines = 1 << 20

func (b *builder) markerFileMapped(e *event.Map) {
	pr := b.live(e.Pid, e.Time)
	for _, m := range b.markerFiles {
		if m.pr == pr && m.path == e.Path {
			return // mapped again: one read is enough
		}
	}
	tid := e.Tid
	if tid == 0 {
		tid = e.Pid
	}
	b.markerFiles = append(b.markerFiles, markerFile{pr: pr, tid: tid, path: e.Path, mapFile: e.MapFile})
}

// readMarkerFiles reads the marker files of pr not read yet.
func (b *builder) readMarkerFiles(pr *proc) {
	for i := range b.markerFiles {
		m := &b.markerFiles[i]
		if m.pr != pr || m.read {
			continue
		}
		m.read = true
		f, err := os.Open(m.mapFile)
		if m.mapFile == "" || err != nil {
			if f, err = os.Open(m.path); err != nil {
				continue
			}
		}
		th := b.thread(pr, m.tid, b.t0)
		th.Markers = append(th.Markers, b.parseMarkers(f, filepath.Base(m.path))...)
		f.Close()
	}
}

// parseMarkers reads "START END NAME" lines; lines that are not are
// skipped, as samply does.
func (b *builder) parseMarkers(f *os.File, file string) []profile.Marker {
	var out []profile.Marker
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 4096), 1<<16)
	for n := 0; sc.Scan() && n < maxMarkerLines; n++ {
		m, ok := ParseMarkerLine(sc.Text())
		if !ok {
			continue
		}
		out = append(out, profile.Marker{
			Name: m.Name, Start: b.rel(m.Start), End: b.rel(m.End), Phase: profile.PhaseInterval,
			Category: profile.CategoryOther, Data: map[string]any{"type": profile.MarkerFileType, "file": file},
		})
	}
	return out
}

// MarkerLine is one line of a marker file.
type MarkerLine struct {
	Start, End int64 // CLOCK_MONOTONIC ns
	Name       string
}

// ParseMarkerLine reads "START END NAME": two numbers of nanoseconds and
// a name, which is the rest of the line. It reports false for anything
// else, or an END before START.
func ParseMarkerLine(line string) (MarkerLine, bool) {
	line = strings.TrimRight(line, "\r")
	s, rest, ok := strings.Cut(line, " ")
	if !ok {
		return MarkerLine{}, false
	}
	e, name, ok := strings.Cut(rest, " ")
	if !ok || name == "" {
		return MarkerLine{}, false
	}
	start, err1 := strconv.ParseUint(s, 10, 63)
	end, err2 := strconv.ParseUint(e, 10, 63)
	if err1 != nil || err2 != nil || end < start {
		return MarkerLine{}, false
	}
	return MarkerLine{Start: int64(start), End: int64(end), Name: strings.ToValidUTF8(name, "\uFFFD")}, true
}
