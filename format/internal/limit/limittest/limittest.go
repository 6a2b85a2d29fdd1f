// Package limittest builds crafted inputs for the readers' limit tests and
// fuzz seeds.
package limittest

import (
	"bytes"
	"compress/gzip"
	"strings"
)

// GzipBomb gzips head, unit repeated to about n bytes, and tail. It
// repeats one gzip member of 1 MiB of units, so that a gigabyte bomb
// builds in a moment and stays a few kilobytes.
func GzipBomb(head, unit string, n int, tail string) []byte {
	member := func(s string) []byte {
		var buf bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
		zw.Write([]byte(s))
		zw.Close()
		return buf.Bytes()
	}
	block := strings.Repeat(unit, (1<<20)/len(unit))
	out := member(head)
	out = append(out, bytes.Repeat(member(block), n/len(block))...)
	return append(out, member(strings.Repeat(unit, n%len(block)/len(unit))+tail)...)
}
