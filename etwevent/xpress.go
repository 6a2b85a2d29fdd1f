package etwevent

import (
	"encoding/binary"
	"errors"
)

// ErrCorrupt is returned for compressed data that does not decode.
var ErrCorrupt = errors.New("etw: corrupt XPRESS data")

// DecompressXpress decodes MS-XCA "Plain LZ77" (COMPRESSION_FORMAT_XPRESS),
// the compression ETW uses for the buffers of a trace logged with
// EVENT_TRACE_COMPRESSED_MODE, into exactly size bytes (the buffer's
// SavedOffset minus its header).
func DecompressXpress(in []byte, size int) ([]byte, error) {
	return AppendXpress(make([]byte, 0, size), in, size)
}

// AppendXpress is DecompressXpress appending to dst, so that a reader can
// reuse one buffer for all of a file's buffers.
func AppendXpress(dst, in []byte, size int) ([]byte, error) {
	base := len(dst)
	out := dst
	var flags uint32
	flagCount := 0
	ip := 0
	lastHalf := -1 // index of the byte whose high nibble is the next length
	for len(out)-base < size {
		if flagCount == 0 {
			if ip+4 > len(in) {
				break
			}
			flags = binary.LittleEndian.Uint32(in[ip:])
			ip += 4
			flagCount = 32
		}
		flagCount--
		if flags&(1<<flagCount) == 0 {
			if ip >= len(in) {
				break
			}
			out = append(out, in[ip])
			ip++
			continue
		}
		if ip+2 > len(in) {
			break
		}
		mb := int(binary.LittleEndian.Uint16(in[ip:]))
		ip += 2
		length := mb & 7
		offset := mb>>3 + 1
		if length == 7 {
			if lastHalf < 0 {
				if ip >= len(in) {
					return nil, ErrCorrupt
				}
				length = int(in[ip] & 15)
				lastHalf = ip
				ip++
			} else {
				length = int(in[lastHalf] >> 4)
				lastHalf = -1
			}
			if length == 15 {
				if ip >= len(in) {
					return nil, ErrCorrupt
				}
				length = int(in[ip])
				ip++
				if length == 255 {
					if ip+2 > len(in) {
						return nil, ErrCorrupt
					}
					length = int(binary.LittleEndian.Uint16(in[ip:]))
					ip += 2
					if length == 0 {
						if ip+4 > len(in) {
							return nil, ErrCorrupt
						}
						length = int(binary.LittleEndian.Uint32(in[ip:]))
						ip += 4
					}
					if length < 15+7 {
						return nil, ErrCorrupt
					}
					length -= 15 + 7
				}
				length += 15
			}
			length += 7
		}
		length += 3
		if offset > len(out)-base || length < 0 || length > size-(len(out)-base) {
			return nil, ErrCorrupt
		}
		// Copy at most offset bytes at a time: an overlapping match
		// repeats its last offset bytes, which are then all written.
		for start := len(out) - offset; length > 0; {
			n := min(length, offset)
			out = append(out, out[start:start+n]...)
			start += n
			length -= n
		}
	}
	if len(out)-base != size {
		return nil, ErrCorrupt
	}
	return out, nil
}
