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
// nudge back into call instructions; a process's main thread is named
// "GeckoMain", the name the front-end labels with the process name.
//
// What the Gecko fields cannot carry rides in keys the front-end ignores,
// so that Read gives back the model Write was given:
//
//   - meta.gprof: {"lostEvents": n, "extra": {…}} for Meta.LostEvents and
//     Meta.Extra.
//   - "gprofProcess" in each process object: pid, name, start, end (ms
//     since the top-level meta.startTime) and exitCode.
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
// Write also adds instant markers of types "GprofProcess" (process start
// and exit, on the main thread) and "GprofThread" (start and exit of other
// threads, when they fall inside the recording), described in
// meta.markerSchema. Read drops markers of those two types.
//
// Limits of the round trip: a Label that looks like "0x" and hex digits
// reads back as an address; marker payload numbers come back as float64;
// a non-main thread named "GeckoMain" is only told apart by gprofMain;
// categories equal to format.DefaultCategories read back as nil.
package gecko
