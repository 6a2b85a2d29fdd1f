// Package processed reads and writes the Firefox Profiler's "processed"
// profile format, the JSON the front-end keeps in memory and offers for
// download, so a profile opens already symbolicated with no symbol server.
//
// Write emits version 66 (see Version). Read accepts versions 41 through 70.
//
// # Return addresses
//
// Every frame of a caller (a stack that is the prefix of another stack) holds
// a return address, which points after the call instruction. The processed
// format stores such addresses "nudged" by −1 so they fall inside the call
// and symbolicate to the calling line and inline stack. Write does that; a
// frame seen both as a sampled leaf and as a caller becomes two frames.
//
// The model's SymbolTable is keyed by the raw lib-relative address of the
// frame, so whoever fills it stores, under a caller's raw return address,
// what the nudged address resolves to. Write therefore looks up the raw key
// first and, for callers only, falls back to the nudged key, which keeps
// tables built either way usable. Read stores symbols back under the raw
// (un-nudged) key.
//
// # Kernel frames
//
// Kernel frames either lie in a lib of the process's Libs (then they are
// handled like any other lib) or in no lib at all. In the latter case they
// are symbolicated from p.Symbols under the lib whose DebugName is "kernel",
// keyed by absolute address, and are written as a synthetic "kernel" lib
// whose base is just below the lowest kernel address seen, because absolute
// kernel addresses do not fit in a JavaScript number.
package processed

import (
	"bufio"
	"io"
	"strings"

	"github.com/gprof-dev/gprof/internal/atomicfile"
	"github.com/gprof-dev/gprof/profile"
	"github.com/klauspost/compress/gzip"
)

// Version is the processed-format version Write emits. 66 is the oldest
// version with today's table layout (shared tables, sources,
// sourceLocationTable, prefixOffset); every later version up to 70 only
// relaxed column types or moved the lib column, so the current front-end
// upgrades it losslessly, while front-ends deployed before version 70 (such
// as profiler.firefox.com's production branch at 69) still open it.
const Version = 66

// geckoVersion fills meta.version, which the front-end ignores for processed
// profiles but requires to be present.
const geckoVersion = 24

// lifecycleType is the marker schema given to markers that carry no
// payload, so the UI lists them with a label instead of as schemaless
// markers. (The process and thread start, exec and exit markers gprof
// derives from lifetimes have payloads and schemas of their own; see
// package format/internal/lifecycle.)
const lifecycleType = "Lifecycle"

// WriteFile writes p to path, gzip-compressed when path ends in ".gz" (in
// any case). A regular file is written as a temporary file in the same
// directory and renamed into place, so an interrupted write never leaves a
// truncated profile behind; a device or FIFO is written in place (see
// internal/atomicfile).
func WriteFile(path string, p *profile.Profile) error {
	return atomicfile.Write(path, func(w io.Writer) error {
		if !strings.HasSuffix(strings.ToLower(path), ".gz") {
			return Write(w, p)
		}
		zw := gzip.NewWriter(w)
		if err := Write(zw, p); err != nil {
			return err
		}
		return zw.Close()
	})
}

// Write writes p as a processed profile. Tables are built in memory (they
// grow with distinct frames and stacks); samples and markers are streamed.
func Write(w io.Writer, p *profile.Profile) error {
	b, err := build(p)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(w, 256<<10)
	j := newJSONWriter(bw)
	b.write(j)
	if err := j.out.Err(); err != nil {
		return err
	}
	return bw.Flush()
}
