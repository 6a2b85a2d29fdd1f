// Package load reads a profile file in whichever format it is in.
package load

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/gprof-dev/gprof/format"
	"github.com/gprof-dev/gprof/format/etl"
	"github.com/gprof-dev/gprof/format/gecko"
	"github.com/gprof-dev/gprof/format/pprof"
	"github.com/gprof-dev/gprof/format/processed"
	"github.com/klauspost/compress/gzip"
)

// Kind names a profile format.
type Kind string

const (
	Gecko     Kind = "gecko"
	Processed Kind = "processed"
	PProf     Kind = "pprof"
	ETL       Kind = "etl"
)

// sniffSize is how much of the (decompressed) file is searched for the
// processed format's version key. Writers put meta first, gprof's and the
// Firefox Profiler's alike, so the key is near the start when present.
const sniffSize = 1 << 20

// File reads the profile at path, gzipped or not, and says which format it
// was in.
func File(path string) (*format.Profile, Kind, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, "", err
	}
	defer f.Close()
	p, k, err := Reader(f)
	if err != nil {
		return nil, k, fmt.Errorf("%s: %w", path, err)
	}
	return p, k, nil
}

// Reader reads a profile from r.
func Reader(r io.Reader) (*format.Profile, Kind, error) {
	br := bufio.NewReaderSize(r, sniffSize)
	var src io.Reader = br
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, "", fmt.Errorf("not a valid gzip file: %w", err)
		}
		defer zr.Close()
		src = bufio.NewReaderSize(zr, sniffSize)
	}
	sr := src.(*bufio.Reader)
	head, err := sr.Peek(sniffSize)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, bufio.ErrBufferFull) {
		if len(head) == 0 {
			return nil, "", fmt.Errorf("cannot read: %w", err)
		}
	}
	if len(bytes.TrimSpace(head)) == 0 {
		return nil, "", errors.New("empty file, not a profile")
	}
	if etl.Sniff(head) {
		p, err := etl.Read(sr)
		return p, ETL, err
	}
	if pprof.Sniff(head) {
		p, err := pprof.Read(sr)
		return p, PProf, err
	}
	if bytes.Contains(head, []byte(`"preprocessedProfileVersion"`)) {
		p, err := processed.Read(sr)
		return p, Processed, err
	}
	p, err := gecko.Read(sr)
	return p, Gecko, err
}
