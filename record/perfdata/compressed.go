package perfdata

import (
	"bytes"
	"errors"
	"io"

	"github.com/klauspost/compress/zstd"
)

// decompress decodes the records 'perf record -z' compressed. perf feeds
// each ring-buffer chunk to one zstd stream and flushes it into
// PERF_RECORD_COMPRESSED records, so their payloads, joined in file order,
// are one zstd stream of ordinary records. They are read after the rest;
// ordering by time puts them in place.
func (f *File) decompress() error {
	if len(f.compressed) == 0 {
		return nil
	}
	var joined []byte
	for _, rec := range f.compressed {
		data := rec[8:]
		if f.bo.Uint32(rec) == recCompressedNext {
			if len(rec) < 16 {
				continue
			}
			n := f.bo.Uint64(rec[8:])
			data = rec[16:]
			if n < uint64(len(data)) {
				data = data[:n]
			}
		}
		joined = append(joined, data...)
	}
	f.compressed = nil
	zr, err := zstd.NewReader(bytes.NewReader(joined), zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(64<<20))
	if err != nil {
		return ErrCompressed
	}
	defer zr.Close()
	out, err := io.ReadAll(zr)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && len(out) == 0 {
		return ErrCompressed
	}
	return f.readRecords(out, true)
}
