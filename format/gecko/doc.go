// Package gecko reads and writes profiles in the Gecko profile format, the
// JSON that Firefox's profiler produces and the Firefox Profiler
// (profiler.firefox.com) imports.
//
// Write produces exactly what the current front-end accepts at
// meta.version 36: v34 sources tables, 8-column frame tables, samples with
// eventDelay and threadCPUDelta (in µs), one top-level process and the rest
// under "processes". Each process's libs are sorted and made disjoint with
// format.SortLibs, since the front-end binary-searches them. Native frames
// are raw "0x…" addresses, left for the front-end to symbolicate and to
// nudge back into call instructions; the main thread of an OS process's
// last image is named "GeckoMain", the name the front-end makes the main
// thread of its process track and labels with the process name.
//
// Processes and threads are identified as format.TrackIDs says, the same
// way as in the processed format: the images an exec makes of one OS
// process are separate process objects (each with its own libs) that share
// one pid, so they share one process track, named "sh → perl"; the main
// threads of earlier images are ordinary threads of that track, with the
// string tid "tid.N" as the real tid is taken. A reused pid is written
// "pid.N".
//
// What the Gecko fields cannot carry rides in keys the front-end ignores,
// so that Read gives back the model Write was given:
//
//   - meta.gprof: {"lostEvents": n, "extra": {…}} for Meta.LostEvents and
//     Meta.Extra.
//   - "gprofProcess" in each process object: pid, name, start, end (ms
//     since the top-level meta.startTime), exitCode, and "exec": true for
//     an image that began with an exec (profile.Process.Exec).
//   - "gprofName" and "gprofMain" on each thread: its own name and whether
//     it is the main thread, which the GeckoMain convention hides.
//   - a "weight" column in a samples schema, when the model has weights
//     (the front-end counts every sample as one).
//   - "gprofSymbols" at the top level: stored symbols; see writeSymbols.
//
// Times are written as exact decimal milliseconds of the model's
// nanoseconds, and Read parses decimals exactly, so they round-trip to the
// nanosecond. A subprocess's meta.startTime is the process's start (or the
// recording's, if earlier), and its times count from there.
//
// Write also adds instant markers of types "GprofProcess" (process start,
// exec and exit, on the main thread) and "GprofThread" (start and exit of
// other threads, when they fall inside the recording), described in
// meta.markerSchema; the processed writer adds the same ones (see package
// format/internal/lifecycle). Read drops markers of those two types.
//
// Python frames (profile.CategoryPython, with a File) are written as the
// front-end reads a script's function: the location "name (file:line)",
// line being where the function starts, and the frame's own line in the
// frame table's line column; the front-end makes them JS functions with
// that file and line. Read gives them back when the categories have
// gprof's Python category.
//
// Limits of the round trip: a Label that looks like "0x" and hex digits
// reads back as an address; marker payload numbers come back as float64;
// a non-main thread named "GeckoMain" is only told apart by gprofMain;
// categories equal to format.DefaultCategories read back as nil.
package gecko
