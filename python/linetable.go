package python

// Line tables map an instruction to its source line; each version has
// its own encoding (CPython's Objects/lnotab_notes.txt, and
// Objects/locations.md from 3.11).

// lineLnotab is the line of the instruction at byte offset off in a 3.8
// or 3.9 co_lnotab: pairs of (address increment, signed line increment).
func lineLnotab(tab []byte, first int32, off int64) int32 {
	line, addr := first, int64(0)
	for i := 0; i+1 < len(tab); i += 2 {
		addr += int64(tab[i])
		if addr > off {
			break
		}
		line += int32(int8(tab[i+1]))
	}
	return line
}

// lineTable310 is the line of the instruction at byte offset off in a
// 3.10 co_linetable: pairs of (byte length, signed line delta), a delta
// of -128 marking a range without a line.
func lineTable310(tab []byte, first int32, off int64) int32 {
	line, start := first, int64(0)
	last := first
	for i := 0; i+1 < len(tab); i += 2 {
		end := start + int64(tab[i])
		d := int8(tab[i+1])
		if d != -128 {
			line += int32(d)
		}
		if off >= start && off < end {
			if d == -128 {
				return last
			}
			return line
		}
		if d != -128 {
			last = line
		}
		start = end
	}
	return last
}

// lineLocations is the line of the instruction at index idx (in 2-byte
// code units) in a 3.11+ location table: entries of a header byte
// (1, code:4, length-1:3) and then, by code, varints of the line delta
// and columns.
func lineLocations(tab []byte, first int32, idx int64) int32 {
	line := first
	unit := int64(0)
	p := 0
	varint := func() uint64 {
		var v uint64
		var shift uint
		for p < len(tab) {
			b := tab[p]
			p++
			v |= uint64(b&63) << shift
			shift += 6
			if b&64 == 0 {
				break
			}
		}
		return v
	}
	svarint := func() int32 {
		v := varint()
		if v&1 != 0 {
			return -int32(v >> 1)
		}
		return int32(v >> 1)
	}
	for p < len(tab) {
		h := tab[p]
		p++
		if h&0x80 == 0 {
			return line // out of step: not a header
		}
		code := (h >> 3) & 15
		n := int64(h&7) + 1
		has := true
		switch {
		case code == 15: // no location
			has = false
		case code == 14: // long form
			line += svarint()
			varint() // end line delta
			varint() // column + 1
			varint() // end column + 1
		case code == 13: // no column
			line += svarint()
		case code >= 10: // one line: delta code-10, then two column bytes
			line += int32(code - 10)
			p += 2
		default: // short form, same line: one column byte
			p++
		}
		if idx >= unit && idx < unit+n {
			if !has {
				return -1
			}
			return line
		}
		unit += n
	}
	return -1
}
