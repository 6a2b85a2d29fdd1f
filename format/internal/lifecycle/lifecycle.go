// Package lifecycle makes the process and thread start, exec and exit
// markers that both writers add, so that a Gecko file and its processed
// conversion show the same markers. They are derived from the model's
// lifetimes (Process.Start/End, Thread.Start/End, Process.Exec), so the
// readers drop markers of these types and restore the facts from those
// fields instead.
package lifecycle

import (
	"strconv"

	"github.com/gprof-dev/gprof/profile"
)

// Marker payload types.
const (
	ProcessType = "GprofProcess"
	ThreadType  = "GprofThread"
)

// IsLifecycle reports whether a marker payload type is one of this
// package's.
func IsLifecycle(typ string) bool { return typ == ProcessType || typ == ThreadType }

// Carrier returns the thread of image pr that carries its process markers:
// its main thread, or its first thread when it has none.
func Carrier(pr *profile.Process) *profile.Thread {
	for _, th := range pr.Threads {
		if th != nil && th.Main {
			return th
		}
	}
	if len(pr.Threads) > 0 {
		return pr.Threads[0]
	}
	return nil
}

// Markers returns the lifetime markers of thread th of image pr.
//
// The carrier of an OS process's first image gets "Process start"; each
// later image's carrier gets "Exec" when it starts (the previous image
// ends there, with no exit marker); the last image's carrier gets
// "Process exit". Other threads get "Thread start" and "Thread exit".
// Payloads carry the pid and tid exactly as the thread tables spell them
// (ids), which is what lets the front-end's "pid" and "tid" field formats
// resolve them to names: "sh → perl (1234)".
func Markers(ids *profile.TrackIDs, pr *profile.Process, th *profile.Thread) []profile.Marker {
	o := ids.Process(pr)
	if o == nil {
		return nil
	}
	var out []profile.Marker
	add := func(name string, t int64, data map[string]any) {
		out = append(out, profile.Marker{Name: name, Start: t, End: t, Phase: profile.PhaseInstant,
			Category: profile.CategoryOther, Data: data})
	}
	if th != Carrier(pr) {
		data := map[string]any{"type": ThreadType, "threadName": th.Name, "tid": idValue(ids.Tid(th))}
		if th.Start > 0 {
			add("Thread start", th.Start, data)
		}
		if th.End >= 0 {
			add("Thread exit", th.End, data)
		}
		return out
	}
	image := o.Image(pr)
	process := func() map[string]any {
		return map[string]any{"type": ProcessType, "name": pr.Name, "pid": o.Pid}
	}
	switch {
	case image > 0:
		data := process()
		data["previous"] = o.Images[image-1].Name
		add("Exec", pr.Start, data)
	case pr.Start > 0:
		add("Process start", pr.Start, process())
	}
	if pr.End >= 0 && image == len(o.Images)-1 {
		data := process()
		data["exitCode"] = pr.ExitCode
		add("Process exit", pr.End, data)
	}
	return out
}

// idValue is a pid or tid from profile.TrackIDs as the thread tables write
// it: a number, or a string.
func idValue(id string) any {
	if n, err := strconv.Atoi(id); err == nil {
		return n
	}
	return id
}

// EventThreadName is the name of the track of a thread's samples of an
// event other than the profile's first, in both writers: "NAME [EVENT]",
// NAME being the thread's, or its process's for a thread without one.
func EventThreadName(thread, process, event string) string {
	if thread == "" {
		thread = process
	}
	return thread + " [" + event + "]"
}

// HasSchema reports whether Schema describes a payload type that is not a
// lifecycle one: the recorder's off-CPU, tracepoint and marker-file
// markers.
func HasSchema(typ string) bool {
	return typ == profile.OffCPUMarkerType || typ == profile.TracepointMarkerType || typ == profile.MarkerFileType
}

// Schema returns the marker schemas of the payload types, as JSON objects
// for meta.markerSchema. fieldsKey is "data" in the Gecko format and
// "fields" in the processed format.
func Schema(fieldsKey string) []string {
	return []string{
		`{"name":"` + ProcessType + `","tooltipLabel":"{marker.name}: {marker.data.name}",` +
			`"tableLabel":"{marker.name}: {marker.data.name}","chartLabel":"{marker.data.name}",` +
			`"display":["marker-chart","marker-table","timeline-overview"],` +
			`"` + fieldsKey + `":[{"key":"name","label":"Program","format":"string","searchable":true},` +
			`{"key":"previous","label":"Replaced","format":"string","searchable":true},` +
			`{"key":"pid","label":"Process","format":"pid","searchable":true},` +
			`{"key":"exitCode","label":"Exit code","format":"integer"}]}`,
		`{"name":"` + ThreadType + `","tooltipLabel":"{marker.name}: {marker.data.threadName}",` +
			`"tableLabel":"{marker.name}: {marker.data.threadName}","chartLabel":"{marker.data.threadName}",` +
			`"display":["marker-chart","marker-table"],` +
			`"` + fieldsKey + `":[{"key":"threadName","label":"Name","format":"string","searchable":true},` +
			`{"key":"tid","label":"Thread","format":"tid","searchable":true}]}`,
		`{"name":"` + profile.OffCPUMarkerType + `","tooltipLabel":"{marker.name} in {marker.data.function}",` +
			`"tableLabel":"{marker.name} in {marker.data.function} ({marker.data.syscall})","chartLabel":"{marker.data.function}",` +
			`"display":["marker-chart","marker-table","timeline-overview"],` +
			`"` + fieldsKey + `":[{"key":"function","label":"Waiting in","format":"string","searchable":true},` +
			`{"key":"stack","label":"Called from","format":"string","searchable":true},` +
			`{"key":"syscall","label":"System call","format":"string","searchable":true},` +
			`{"key":"wchan","label":"Wait channel","format":"string","searchable":true}]}`,
		`{"name":"` + profile.TracepointMarkerType + `","tooltipLabel":"{marker.name} {marker.data.fields}",` +
			`"tableLabel":"{marker.data.fields}","chartLabel":"{marker.data.fields}",` +
			`"display":["marker-chart","marker-table"],` +
			`"` + fieldsKey + `":[{"key":"fields","label":"Fields","format":"string","searchable":true}]}`,
		`{"name":"` + profile.MarkerFileType + `","tooltipLabel":"{marker.name}",` +
			`"tableLabel":"{marker.name}","chartLabel":"{marker.name}",` +
			`"display":["marker-chart","marker-table","timeline-overview"],` +
			`"` + fieldsKey + `":[{"key":"file","label":"Marker file","format":"string","searchable":true}]}`,
	}
}
