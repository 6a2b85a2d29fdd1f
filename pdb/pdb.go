package pdb

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"slices"
)

// Fixed stream numbers.
const (
	streamPDB = 1
	streamDBI = 3
)

// Symbol record kinds gprof reads.
const (
	sPub32     = 0x110E
	sLProc32   = 0x110F
	sGProc32   = 0x1110
	sLProc32ID = 0x1146
	sGProc32ID = 0x1147
	sThunk32   = 0x1102
)

// Line subsection kinds in a module's C13 data.
const (
	debugSLines     = 0xF2
	debugSFileChksm = 0xF4
)

// File is a parsed PDB.
type File struct {
	// GUID and Age identify the PDB; a binary's RSDS record must carry the
	// same to match. GUID is in its in-memory (little-endian fields)
	// layout. Age is the DBI stream's, which is what the linker writes
	// into the binary, or the PDB stream's when there is no DBI stream.
	GUID     [16]byte
	Age      uint32
	Sections []Section
	Publics  []Public
	Funcs    []Func // sorted by RVA
	lines    []line // sorted by RVA
	files    []string
	// funcPublics are the Publics that name functions in a known
	// section, sorted by RVA.
	funcPublics []Public
}

// Section is one section header of the image, from the DBI stream's
// optional debug header.
type Section struct {
	Name        string
	VirtualSize uint32
	RVA         uint32
}

// Public is an S_PUB32 record: a linker-visible name (decorated).
type Public struct {
	Name            string
	Section         uint16
	Offset          uint32
	RVA             uint32
	Function, Valid bool // Valid: the section exists, so RVA means something
}

// Func is a procedure from a module symbol stream.
type Func struct {
	Name   string
	RVA    uint32
	Size   uint32
	Module int
}

// line says that code from RVA on is the given line of file.
type line struct {
	rva  uint32
	end  uint32 // end of the block the entry belongs to
	file int32
	line uint32
}

// Line is one line-table entry, as llvm-pdbutil dump -l lists them.
type Line struct {
	RVA  uint32
	File string
	Line int
}

// Open reads the PDB at path.
func Open(path string) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	f, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}

// Parse parses a whole PDB file held in memory.
func Parse(data []byte) (*File, error) {
	m, err := openMSF(data)
	if err != nil {
		return nil, err
	}
	f := &File{}
	info, err := m.stream(streamPDB)
	if err != nil || len(info) < 28 {
		return nil, errors.New("PDB has no PDB info stream")
	}
	le := binary.LittleEndian
	f.Age = le.Uint32(info[8:])
	copy(f.GUID[:], info[12:28])
	names := namedStreams(info[28:])

	var strtab []byte
	if i, ok := names["/names"]; ok {
		if s, err := m.stream(i); err == nil && len(s) >= 12 && le.Uint32(s) == 0xEFFEEFFE {
			n := int(le.Uint32(s[8:]))
			if 12+n <= len(s) {
				strtab = s[12 : 12+n]
			}
		}
	}

	dbi, err := m.stream(streamDBI)
	if err != nil {
		return nil, fmt.Errorf("PDB DBI stream: %w", err)
	}
	if len(dbi) < 64 {
		return f, nil // a PDB with types only
	}
	if age := le.Uint32(dbi[8:]); age != 0 {
		f.Age = age
	}
	symRecStream := int(le.Uint16(dbi[20:]))
	sizes := make([]int, 8)
	for i, off := range []int{24, 28, 32, 36, 40, 48, 52} {
		sizes[i] = int(int32(le.Uint32(dbi[off:])))
		if sizes[i] < 0 {
			return nil, errors.New("PDB DBI stream is corrupt")
		}
	}
	modInfo, secContr, secMap, srcInfo, tsMap, dbgHdr, ec := sizes[0], sizes[1], sizes[2], sizes[3], sizes[4], sizes[5], sizes[6]
	pos := 64
	if pos+modInfo+secContr+secMap+srcInfo+tsMap+ec+dbgHdr > len(dbi) {
		return nil, errors.New("PDB DBI stream is cut short")
	}
	mods := dbi[pos : pos+modInfo]
	pos += modInfo + secContr + secMap + srcInfo + tsMap + ec
	dbg := dbi[pos : pos+dbgHdr]
	// The optional debug header's sixth entry is the section header
	// stream.
	if len(dbg) >= 12 {
		if si := int(le.Uint16(dbg[10:])); si != 0xFFFF {
			if sh, err := m.stream(si); err == nil {
				for i := 0; i+40 <= len(sh); i += 40 {
					f.Sections = append(f.Sections, Section{
						Name:        cstring(sh[i : i+8]),
						VirtualSize: le.Uint32(sh[i+8:]),
						RVA:         le.Uint32(sh[i+12:]),
					})
				}
			}
		}
	}

	if symRecStream != 0xFFFF {
		if recs, err := m.stream(symRecStream); err == nil {
			f.readPublics(recs)
		}
	}

	fileIndex := map[string]int32{}
	for mod := 0; len(mods) >= 64; mod++ {
		symStream := int(le.Uint16(mods[34:]))
		symBytes := int(le.Uint32(mods[36:]))
		c11Bytes := int(le.Uint32(mods[40:]))
		c13Bytes := int(le.Uint32(mods[44:]))
		rest := mods[64:]
		n1 := indexByte0(rest)
		if n1 < 0 {
			break
		}
		n2 := indexByte0(rest[n1+1:])
		if n2 < 0 {
			break
		}
		size := (64 + n1 + 1 + n2 + 1 + 3) &^ 3
		if size > len(mods) {
			size = len(mods)
		}
		mods = mods[size:]
		if symStream == 0xFFFF {
			continue
		}
		s, err := m.stream(symStream)
		if err != nil || symBytes < 4 || symBytes+c11Bytes+c13Bytes > len(s) {
			continue
		}
		f.readProcs(s[4:symBytes], mod)
		f.readLines(s[symBytes+c11Bytes:symBytes+c11Bytes+c13Bytes], strtab, fileIndex)
	}
	slices.SortStableFunc(f.Funcs, func(a, b Func) int { return cmp.Compare(a.RVA, b.RVA) })
	for _, p := range f.Publics {
		if p.Valid && p.Function {
			f.funcPublics = append(f.funcPublics, p)
		}
	}
	slices.SortStableFunc(f.funcPublics, func(a, b Public) int { return cmp.Compare(a.RVA, b.RVA) })
	slices.SortStableFunc(f.lines, func(a, b line) int { return cmp.Compare(a.rva, b.rva) })
	return f, nil
}

// namedStreams reads the PDB info stream's name → stream map.
func namedStreams(b []byte) map[string]int {
	le := binary.LittleEndian
	out := map[string]int{}
	if len(b) < 4 {
		return out
	}
	n := int(le.Uint32(b))
	if 4+n > len(b) {
		return out
	}
	strs := b[4 : 4+n]
	h := b[4+n:]
	if len(h) < 12 {
		return out
	}
	size, capacity := int(le.Uint32(h)), int(le.Uint32(h[4:]))
	words := int(le.Uint32(h[8:]))
	if capacity > 1<<20 || words > len(h)/4 {
		return out
	}
	present := make([]uint32, words)
	for i := range present {
		present[i] = le.Uint32(h[12+4*i:])
	}
	p := 12 + 4*words
	if p+4 > len(h) {
		return out
	}
	deleted := int(le.Uint32(h[p:]))
	p += 4 + 4*deleted
	for i := 0; i < capacity && size > 0; i++ {
		if i/32 >= len(present) || present[i/32]&(1<<(i%32)) == 0 {
			continue
		}
		if p+8 > len(h) {
			break
		}
		key, val := int(le.Uint32(h[p:])), int(le.Uint32(h[p+4:]))
		p += 8
		if key < len(strs) {
			out[cstring(strs[key:])] = val
		}
		size--
	}
	return out
}

// rva converts a section:offset address to an RVA.
func (f *File) rva(section uint16, offset uint32) (uint32, bool) {
	if section == 0 || int(section) > len(f.Sections) {
		return 0, false
	}
	return f.Sections[section-1].RVA + offset, true
}

// records calls fn for each CodeView symbol record in b.
func records(b []byte, fn func(kind uint16, data []byte)) {
	le := binary.LittleEndian
	for len(b) >= 4 {
		n := int(le.Uint16(b))
		if n < 2 || 2+n > len(b) {
			return
		}
		fn(le.Uint16(b[2:]), b[4:2+n])
		b = b[2+n:]
	}
}

func (f *File) readPublics(recs []byte) {
	le := binary.LittleEndian
	records(recs, func(kind uint16, d []byte) {
		if kind != sPub32 || len(d) < 10 {
			return
		}
		p := Public{
			Function: le.Uint32(d)&2 != 0,
			Offset:   le.Uint32(d[4:]),
			Section:  le.Uint16(d[8:]),
			Name:     cstring(d[10:]),
		}
		p.RVA, p.Valid = f.rva(p.Section, p.Offset)
		f.Publics = append(f.Publics, p)
	})
}

func (f *File) readProcs(syms []byte, mod int) {
	le := binary.LittleEndian
	records(syms, func(kind uint16, d []byte) {
		switch kind {
		case sGProc32, sLProc32, sGProc32ID, sLProc32ID:
			if len(d) < 35 {
				return
			}
			size := le.Uint32(d[12:])
			off := le.Uint32(d[28:])
			sec := le.Uint16(d[32:])
			if rva, ok := f.rva(sec, off); ok {
				f.Funcs = append(f.Funcs, Func{Name: cstring(d[35:]), RVA: rva, Size: size, Module: mod})
			}
		case sThunk32:
			// Parent, End, Next, Offset, Segment, Length, Ordinal, Name.
			if len(d) < 21 {
				return
			}
			off := le.Uint32(d[12:])
			sec := le.Uint16(d[16:])
			size := uint32(le.Uint16(d[18:]))
			if rva, ok := f.rva(sec, off); ok {
				f.Funcs = append(f.Funcs, Func{Name: cstring(d[21:]), RVA: rva, Size: size, Module: mod})
			}
		}
	})
}

// readLines reads a module's C13 line information.
func (f *File) readLines(c13, strtab []byte, fileIndex map[string]int32) {
	le := binary.LittleEndian
	// The checksums subsection maps a block's file reference (an offset
	// into it) to a name in /names; it may come after the lines.
	chk := map[uint32]int32{}
	var linesSubs [][]byte
	for b := c13; len(b) >= 8; {
		kind, n := le.Uint32(b), int(le.Uint32(b[4:]))
		if n < 0 || 8+n > len(b) {
			break
		}
		data := b[8 : 8+n]
		switch kind {
		case debugSLines:
			linesSubs = append(linesSubs, data)
		case debugSFileChksm:
			for off := 0; off+6 <= len(data); {
				nameOff := le.Uint32(data[off:])
				csize := int(data[off+4])
				name := ""
				if int(nameOff) < len(strtab) {
					name = cstring(strtab[nameOff:])
				}
				idx, ok := fileIndex[name]
				if !ok {
					idx = int32(len(f.files))
					f.files = append(f.files, name)
					fileIndex[name] = idx
				}
				chk[uint32(off)] = idx
				off = (off + 6 + csize + 3) &^ 3
			}
		}
		b = b[min((8+n+3)&^3, len(b)):]
	}
	for _, d := range linesSubs {
		if len(d) < 12 {
			continue
		}
		off := le.Uint32(d)
		sec := le.Uint16(d[4:])
		flags := le.Uint16(d[6:])
		codeSize := le.Uint32(d[8:])
		base, ok := f.rva(sec, off)
		if !ok {
			continue
		}
		for b := d[12:]; len(b) >= 12; {
			fileRef, nLines, blockSize := le.Uint32(b), int(le.Uint32(b[4:])), int(le.Uint32(b[8:]))
			if blockSize < 12 || blockSize > len(b) || nLines > (blockSize-12)/8 {
				break
			}
			file, ok := chk[fileRef]
			if !ok {
				file = -1
			}
			for i := 0; i < nLines; i++ {
				e := b[12+8*i:]
				ln := le.Uint32(e[4:]) & 0xFFFFFF
				if ln == 0xFEEFEE || ln == 0xF00F00 { // "always step into" / hidden
					continue
				}
				f.lines = append(f.lines, line{rva: base + le.Uint32(e), end: base + codeSize, file: file, line: ln})
			}
			_ = flags // columns follow the lines when flags&1; the block size covers them
			b = b[blockSize:]
		}
	}
}

// Lines returns every line-table entry in RVA order.
func (f *File) Lines() []Line {
	out := make([]Line, len(f.lines))
	for i, l := range f.lines {
		out[i] = Line{RVA: l.rva, Line: int(l.line), File: f.fileName(l.file)}
	}
	return out
}

func (f *File) fileName(i int32) string {
	if i < 0 || int(i) >= len(f.files) {
		return ""
	}
	return f.files[i]
}

// BreakpadID is the identity symbol servers and the Firefox Profiler file
// this PDB under: GUID as Windows prints it, no dashes, uppercase, then
// the age in hex.
func (f *File) BreakpadID() string {
	le := binary.LittleEndian
	g := f.GUID
	return fmt.Sprintf("%08X%04X%04X%X%x", le.Uint32(g[0:]), le.Uint16(g[4:]), le.Uint16(g[6:]), g[8:], f.Age)
}

// Symbol is what an address resolves to.
type Symbol struct {
	Name   string
	RVA    uint32 // where the function starts
	File   string
	Line   int
	Public bool // named from the public symbols only (no module record)
	// Folded names the other functions the linker folded into this one
	// (identical code, one address); Publics the linker names (decorated)
	// at its start.
	Folded  []string
	Publics []string
}

// Lookup resolves an image-relative address.
func (f *File) Lookup(rva uint32) (Symbol, bool) {
	var s Symbol
	i, found := slices.BinarySearchFunc(f.Funcs, rva, func(fn Func, r uint32) int { return cmp.Compare(fn.RVA, r) })
	if found {
		for i+1 < len(f.Funcs) && f.Funcs[i+1].RVA == rva {
			i++
		}
	} else {
		i--
	}
	// Funcs may repeat at one RVA (a thunk and its procedure); look at
	// the few that start last at or before rva for one that covers it.
	for k := 0; i >= 0 && k < 8; i, k = i-1, k+1 {
		fn := f.Funcs[i]
		if rva < fn.RVA+fn.Size || fn.Size == 0 && rva == fn.RVA {
			s = Symbol{Name: fn.Name, RVA: fn.RVA}
			for j := i - 1; j >= 0 && f.Funcs[j].RVA == fn.RVA; j-- {
				s.Folded = append(s.Folded, f.Funcs[j].Name)
			}
			break
		}
	}
	if s.Name == "" {
		p, ok := f.public(rva)
		if !ok {
			return s, false
		}
		s = Symbol{Name: p.Name, RVA: p.RVA, Public: true}
	}
	for _, name := range f.publicsAt(s.RVA) {
		if name != s.Name {
			s.Publics = append(s.Publics, name)
		}
	}
	slices.Sort(s.Publics)
	j, found := slices.BinarySearchFunc(f.lines, rva, func(l line, r uint32) int { return cmp.Compare(l.rva, r) })
	if found {
		for j+1 < len(f.lines) && f.lines[j+1].rva == rva {
			j++
		}
	} else {
		j--
	}
	if j >= 0 && rva < f.lines[j].end && f.lines[j].rva >= s.RVA {
		s.File, s.Line = f.fileName(f.lines[j].file), int(f.lines[j].line)
	}
	return s, true
}

// public returns the function public symbol at or before rva, within its
// section.
func (f *File) public(rva uint32) (Public, bool) {
	ps := f.funcPublics
	i, found := slices.BinarySearchFunc(ps, rva, func(p Public, r uint32) int { return cmp.Compare(p.RVA, r) })
	if found {
		for i+1 < len(ps) && ps[i+1].RVA == rva {
			i++
		}
	} else {
		i--
	}
	if i < 0 {
		return Public{}, false
	}
	p := ps[i]
	if sec := f.Sections[p.Section-1]; rva >= sec.RVA+max(sec.VirtualSize, 1) {
		return Public{}, false
	}
	return p, true
}

// publicsAt returns the names of the function publics at rva.
func (f *File) publicsAt(rva uint32) []string {
	ps := f.funcPublics
	i, _ := slices.BinarySearchFunc(ps, rva, func(p Public, r uint32) int { return cmp.Compare(p.RVA, r) })
	var out []string
	for ; i < len(ps) && ps[i].RVA == rva; i++ {
		out = append(out, ps[i].Name)
	}
	return out
}

func cstring(b []byte) string {
	if i := indexByte0(b); i >= 0 {
		return string(b[:i])
	}
	return string(b)
}

func indexByte0(b []byte) int {
	for i, c := range b {
		if c == 0 {
			return i
		}
	}
	return -1
}
