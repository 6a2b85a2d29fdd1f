// Package load reads a profile file in whichever format it is in.
package format

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/gprof-dev/gprof/format/gecko"
	"github.com/gprof-dev/gprof/format/pprof"
	"github.com/gprof-dev/gprof/format/processed"
	"github.com/gprof-dev/gprof/profile"
	"github.com/klauspost/compress/gzip"
)

// Kind names a profile format.
type Kind string

const (
	Gecko     Kind = "gecko"
	Processed Kind = "processed"
	PProf     Kind = "pprof"
)

// sniffSize is how much of the (decompressed) file is searched for the
// processed format's version key. Writers put meta first, gprof's and the
// Firefox Profiler's alike, so the key is near the start when present.
const sniffSize = 1 << 20

// File reads the profile at path, gzipped or not, and says which format it
// was in.
func File(path string) (*profile.Profile, Kind, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, "", err
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.IsDir() {
		return nil, "", fmt.Errorf("%s: %w", path, notProfile("a directory"))
	}
	p, k, err := Reader(f)
	if err != nil {
		return nil, k, fmt.Errorf("%s: %w", path, err)
	}
	return p, k, nil
}

// An Importer reads a format that needs more than the model to become a
// profile: a perf.data file or an ETL trace is replayed through the
// recorder, which unwinds and identifies its binaries. Such a package
// registers itself (as image formats do with package image), so that this
// package, which the recorder's own output goes through, imports no
// recorder.
type Importer struct {
	Kind Kind
	// Name is how messages name the format ("ETL"); Kind when empty.
	Name  string
	Sniff func(head []byte) bool // head: the file's first bytes, decompressed
	Read  func(r io.Reader, info FileInfo) (*profile.Profile, error)
}

// FileInfo is what an importer may want to know of the file besides its
// bytes.
type FileInfo struct {
	ModTime time.Time // zero when reading a stream
}

var importers []Importer

// Register makes Reader and File read an importer's format. Call it from
// an init function.
func Register(im Importer) { importers = append(importers, im) }

// Reader reads a profile from r.
//
// A gzipped file is decompressed here only as far as sniffing needs; the
// format reader gets the file's own bytes and decompresses them itself,
// so that it bounds what it holds by the size of the file, not of what it
// was handed (see format/internal/limit).
func Reader(r io.Reader) (*profile.Profile, Kind, error) {
	cr := &countReader{r: r}
	br := bufio.NewReaderSize(cr, sniffSize)
	var (
		src  io.Reader = br
		head []byte
		gz   bool
		cut  bool // the gzip stream ends within the sniffed head
	)
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		// Keep the compressed bytes the sniffing reads, to give them
		// again to the format reader.
		var seen bytes.Buffer
		zr, err := gzip.NewReader(io.TeeReader(br, &seen))
		if err != nil {
			return nil, "", notProfile(gzipFound(err))
		}
		gz = true
		head, err = io.ReadAll(io.LimitReader(zr, sniffSize))
		if err != nil && len(head) == 0 {
			return nil, "", notProfile(gzipFound(err))
		}
		cut = errors.Is(err, io.ErrUnexpectedEOF)
		src = io.MultiReader(&seen, br)
	} else {
		var err error
		head, err = br.Peek(sniffSize)
		if err != nil && !errors.Is(err, io.EOF) && len(head) == 0 {
			return nil, "", fmt.Errorf("cannot read: %w", err)
		}
	}
	// found says what the file holds when no reader takes it.
	found := func(what string) error {
		if gz {
			what = "gzip data holding " + what
		}
		return notProfile(what)
	}
	if len(bytes.TrimSpace(head)) == 0 {
		return nil, "", found(describe(head))
	}
	if cut && (startsJSON(head) && describeJSON(head) == "" || !isText(head) && pprof.Sniff(head)) {
		// A profile, but not all of it: say so rather than where its
		// reader ran out of input.
		return nil, "", cutShort(cr.n)
	}
	for _, im := range importers {
		if im.Sniff(head) {
			var info FileInfo
			if st, ok := r.(interface{ Stat() (os.FileInfo, error) }); ok {
				if fi, err := st.Stat(); err == nil {
					info.ModTime = fi.ModTime()
				}
			}
			p, err := im.Read(src, info)
			if gz && errors.Is(err, io.ErrUnexpectedEOF) {
				return nil, im.Kind, cutShort(cr.n)
			}
			return p, im.Kind, err
		}
	}
	if !startsJSON(head) {
		if isText(head) || !pprof.Sniff(head) {
			return nil, "", found(describe(head))
		}
		p, err := pprof.Read(src)
		if gz && errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, PProf, cutShort(cr.n)
		}
		return p, PProf, err
	}
	kind, read := Gecko, gecko.Read
	if bytes.Contains(head, []byte(`"preprocessedProfileVersion"`)) {
		kind, read = Processed, processed.Read
	}
	p, err := read(src)
	if err != nil {
		// JSON, but no profile's: say what it holds rather than where
		// a profile's reader first stumbled over it.
		if what := describeJSON(head); what != "" {
			return nil, "", found(what)
		}
		if gz && errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, kind, cutShort(cr.n)
		}
		return nil, kind, err
	}
	return p, kind, nil
}

// countReader counts the bytes read through it: the size of a file read
// to its end.
type countReader struct {
	r io.Reader
	n int64
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}
