// Package etl reads Event Trace Log files (.etl), as xperf, WPR and
// PerfView write them, into gprof's profile model, on any OS and in pure
// Go. Package etw walks the file's buffers and decodes their events; this
// package assembles processes, threads, images with their identities, and
// sampled stacks.
package etl

import (
	"bufio"
	"errors"
	"io"

	"github.com/gprof-dev/gprof/etw"
	"github.com/gprof-dev/gprof/profile"
)

// Sniff reports whether head, the start of a file, is an ETL file.
func Sniff(head []byte) bool { return etw.SniffETL(head) }

// Options selects what Read keeps.
type Options struct{}

// Read reads an ETL file. It reads one buffer at a time: what it keeps is
// the decoded events a profile needs, not the file.
func Read(r io.Reader) (*profile.Profile, error) {
	br := bufio.NewReaderSize(r, 1<<16)
	head, _ := br.Peek(etw.ETLSniffSize)
	if !Sniff(head) {
		return nil, errors.New("not an ETL file: no WMI buffer header with a logfile header")
	}
	b := newBuilder()
	if err := etw.WalkETL(br, b.event); err != nil {
		return nil, err
	}
	if !b.haveHeader {
		return nil, errors.New("ETL file has no logfile header")
	}
	p := b.profile()
	const how = "record it with the kernel provider's PROC_THREAD, LOADER and PROFILE flags (xperf -on PROC_THREAD+LOADER+PROFILE -stackwalk Profile, or WPR's CPU profile)"
	switch {
	case b.samples == 0:
		return nil, errors.New("the ETL trace has no CPU samples (kernel PerfInfo SampledProfile events): " + how)
	case len(p.Processes) == 0:
		return nil, errors.New("the ETL trace has CPU samples but no kernel thread events to tell whose they are: " + how)
	}
	return p, nil
}
