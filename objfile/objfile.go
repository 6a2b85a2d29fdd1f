// Package objfile is the one place gprof parses object files. It opens ELF,
// Mach-O (thin and fat) and PE files and gives a format-neutral view of
// them: the identity profiles and symbol servers key on (debug name, debug
// ID, code ID, arch, relative-address base), the sections and segments the
// unwinder and symbolizer read (.eh_frame, .debug_frame, .pdata, pclntab,
// DWARF), symbol tables, and the separate debug files (.dSYM bundles) that
// belong to a binary.
//
// Identities are computed exactly as breakpad and samply compute them, so
// that a profile's libs match symbol files other tools make:
//
//   - ELF: the GNU build-id, else the first page of .text folded by XOR;
//     the first 16 bytes read as a GUID in the file's byte order, plus age 0.
//   - Mach-O: LC_UUID as it is, plus age 0; the code ID is the UUID.
//   - PE: the CodeView RSDS GUID with its first three fields byte-swapped,
//     plus the age in hex; the code ID is TimeDateStamp %08X and
//     SizeOfImage %x; the debug name is the PDB's file name.
//
// Addresses come in two kinds. Stated virtual memory addresses (SVMAs) are
// those the file itself uses (symbol values, section addresses, DWARF);
// relative addresses, which profiles use, count from Identity.Base: the
// first PT_LOAD's vaddr for ELF, __TEXT's vmaddr for Mach-O, the image base
// for PE (so that relative addresses are RVAs).
package objfile

import (
	"bytes"
	"compress/zlib"
	"debug/dwarf"
	"debug/elf"
	"debug/macho"
	"debug/pe"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// ErrFormat is the error for files that are none of the formats objfile
// reads.
var ErrFormat = errors.New("not an ELF, Mach-O or PE file")

// Format names an object-file format.
type Format int

const (
	ELF Format = iota + 1
	MachO
	PE
)

func (f Format) String() string {
	switch f {
	case ELF:
		return "elf"
	case MachO:
		return "macho"
	case PE:
		return "pe"
	}
	return "unknown"
}

// Identity is what profiles and symbol servers know a binary by. It is
// gprof's one type for a binary's identity: Open computes it from a file,
// MachOImage.Identity from an image in memory, and a backend that knows
// an image only by what the OS reports of it (an ETW trace's events) fills
// in what it has, leaving the rest zero.
type Identity struct {
	Format Format
	// Name and Path are the binary's own file name and path.
	Name, Path string
	// DebugName and DebugPath name the file symbols are looked up under:
	// the binary itself for ELF and Mach-O, the PDB for PE files that
	// carry a CodeView record.
	DebugName, DebugPath string
	// BreakpadID is the 33-or-more-character debug ID (GUID plus age in
	// hex); empty when the file has nothing to derive it from.
	BreakpadID string
	// CodeID is the ELF build-id in lowercase hex, the Mach-O UUID in
	// uppercase hex, or the PE TimeDateStamp and SizeOfImage; empty when
	// there is none.
	CodeID string
	// BuildID holds the raw ELF build-id or Mach-O UUID.
	BuildID []byte
	Arch    string // "x86_64", "aarch64", "arm64", ...
	// Base is the SVMA that relative address 0 stands for; 0 when not
	// known (an identity made without the file). Where an image lies in
	// a process is its mapping's business, not its identity's.
	Base uint64
}

// Section is one section of a file, by the name the file gives it.
type Section struct {
	Name   string
	Addr   uint64 // SVMA; 0 for sections that are not loaded
	Size   uint64
	Offset uint64 // file offset
	// Exec reports whether the section holds code.
	Exec bool
	// Alloc reports whether the section is loaded into memory (ELF
	// SHF_ALLOC; every section with an address in other formats).
	Alloc bool
	// Compressed reports that the bytes at Offset are compressed
	// (SHF_COMPRESSED, .zdebug_): use Data, not the file's bytes.
	Compressed bool
	r          io.ReaderAt // nil for sections without file contents
	data       func() ([]byte, error)
}

// Data returns the section's contents, decompressed where the format
// compresses them.
func (s *Section) Data() ([]byte, error) {
	if s.data != nil {
		return s.data()
	}
	if s.r == nil {
		return nil, fmt.Errorf("objfile: section %s has no contents in the file", s.Name)
	}
	b := make([]byte, s.Size)
	if _, err := s.r.ReadAt(b, 0); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("objfile: read section %s: %w", s.Name, err)
	}
	return b, nil
}

// ReadAt reads the section's stored bytes (compressed, if Compressed) at
// off within it, without reading the rest of the section.
func (s *Section) ReadAt(p []byte, off int64) (int, error) {
	if s.r == nil {
		return 0, fmt.Errorf("objfile: section %s has no contents in the file", s.Name)
	}
	return s.r.ReadAt(p, off)
}

// InFile reports whether the section has contents in the file: false for
// ELF SHT_NOBITS sections such as .bss, or .eh_frame in a separate debug
// file, whose Offset and Size name no bytes of their own.
func (s *Section) InFile() bool { return s.r != nil || s.data != nil }

// Segment is a loadable range of the file: an ELF PT_LOAD, a Mach-O
// segment, or a PE section (PE has no segments; its sections are what the
// loader maps).
type Segment struct {
	Name     string
	Addr     uint64 // SVMA
	Size     uint64 // in memory
	Offset   uint64 // in the file
	FileSize uint64
	Align    uint64
	Exec     bool
}

// Symbol is a function-like symbol. Addr is an SVMA; Size is the
// symbol's own size or, when the format has none, the distance to the next
// symbol or the end of its section.
type Symbol struct {
	Name string
	Addr uint64
	Size uint64
}

// PDBInfo is a PE file's CodeView RSDS record: what finds and validates
// its PDB.
type PDBInfo struct {
	GUID [16]byte // as stored: Data1..3 little-endian
	Age  uint32
	Path string
}

// An Option changes how Open reads a file.
type Option func(*config)

type config struct {
	arch string
	uuid []byte
}

// Arch selects the slice of a fat Mach-O file by architecture name
// ("arm64", "x86_64", ...). Without it (or UUID) Open takes the slice for
// the host's architecture if there is one, else the first.
func Arch(name string) Option { return func(c *config) { c.arch = name } }

// UUID selects the slice of a fat Mach-O file whose LC_UUID is id, as a
// profile's debug ID does; a thin file with another UUID fails to open.
func UUID(id []byte) Option { return func(c *config) { c.uuid = append([]byte(nil), id...) } }

// File is an opened object file. Its methods are safe for concurrent use
// once Open returns, as they only read.
type File struct {
	format Format
	path   string
	closer io.Closer
	r      io.ReaderAt

	elf   *elf.File
	macho *macho.File
	pe    *pe.File

	arches []string // slices of a fat Mach-O file, in file order

	id       Identity
	sections []*Section
	pdb      *PDBInfo
}

// Open opens the object file at path.
func Open(path string, opts ...Option) (*File, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	f, err := NewFile(fh, path, opts...)
	if err != nil {
		fh.Close()
		return nil, err
	}
	f.closer = fh
	return f, nil
}

// NewFile reads an object file from r, such as an image in memory; path
// names it in the identity and in errors.
func NewFile(r io.ReaderAt, path string, opts ...Option) (*File, error) {
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	var magic [4]byte
	if _, err := r.ReadAt(magic[:], 0); err != nil {
		return nil, fmt.Errorf("objfile: %s: too short to be an object file", path)
	}
	f := &File{path: path, r: r}
	var err error
	switch {
	case bytes.Equal(magic[:], []byte(elf.ELFMAG)):
		f.format = ELF
		err = f.openELF()
	case isMachO(magic):
		f.format = MachO
		err = f.openMachO(cfg)
	case magic[0] == 'M' && magic[1] == 'Z':
		f.format = PE
		err = f.openPE()
	default:
		return nil, fmt.Errorf("objfile: %s: %w", path, ErrFormat)
	}
	if err != nil {
		return nil, err
	}
	f.finishSections()
	return f, nil
}

// Close releases the file.
func (f *File) Close() error {
	if f.closer != nil {
		return f.closer.Close()
	}
	return nil
}

// Format returns the file's format.
func (f *File) Format() Format { return f.format }

// Path returns the path the file was opened by.
func (f *File) Path() string { return f.path }

// Identity returns the file's identity.
func (f *File) Identity() Identity {
	id := f.id
	id.BuildID = append([]byte(nil), f.id.BuildID...)
	return id
}

// ELF, MachO and PE return the underlying parsed file of that format, or
// nil. They exist for callers that still need format-specific detail; new
// code should use the neutral methods.
func (f *File) ELF() *elf.File     { return f.elf }
func (f *File) MachO() *macho.File { return f.macho }
func (f *File) PE() *pe.File       { return f.pe }

// Arches lists the architectures of a fat Mach-O file's slices, in file
// order; nil for other files.
func (f *File) Arches() []string { return f.arches }

// Sections returns the file's sections in file order.
func (f *File) Sections() []*Section { return f.sections }

// Section returns the section called name, or nil. ELF and PE names work
// for every format: on Mach-O, ".eh_frame" finds __TEXT,__eh_frame,
// ".debug_info" finds __DWARF,__debug_info, ".gopclntab" finds
// __gopclntab and ".text" finds __TEXT,__text.
func (f *File) Section(name string) *Section {
	for _, s := range f.sections {
		if s.Name == name {
			return s
		}
	}
	if f.format == MachO && len(name) > 1 && name[0] == '.' {
		if s := f.Section("__" + name[1:]); s != nil {
			return s
		}
	}
	if rest, ok := strings.CutPrefix(name, ".debug_"); ok {
		// Go and older toolchains write zlib-compressed .zdebug_
		// sections; Data decompresses them.
		return f.Section(".zdebug_" + rest)
	}
	return nil
}

// finishSections makes the Data of .zdebug_ (and Mach-O __zdebug_)
// sections decompress them.
func (f *File) finishSections() {
	for _, s := range f.sections {
		if !strings.HasPrefix(s.Name, ".zdebug_") && !strings.HasPrefix(s.Name, "__zdebug_") {
			continue
		}
		s.Compressed = true
		raw := *s // its Data reads the stored bytes
		name := s.Name
		s.data = func() ([]byte, error) {
			b, err := raw.Data()
			if err != nil {
				return nil, err
			}
			return decompressZdebug(name, b)
		}
	}
}

// decompressZdebug decodes the .zdebug_ layout: "ZLIB", the size as a
// big-endian uint64, and a zlib stream.
func decompressZdebug(name string, b []byte) ([]byte, error) {
	if len(b) < 12 || string(b[:4]) != "ZLIB" {
		return b, nil
	}
	size := binary.BigEndian.Uint64(b[4:12])
	if size > 1<<32 {
		return nil, fmt.Errorf("objfile: section %s claims %d bytes uncompressed; the file is damaged", name, size)
	}
	zr, err := zlib.NewReader(bytes.NewReader(b[12:]))
	if err != nil {
		return nil, fmt.Errorf("objfile: decompress section %s: %w", name, err)
	}
	out := make([]byte, size)
	if _, err := io.ReadFull(zr, out); err != nil {
		return nil, fmt.Errorf("objfile: decompress section %s: %w", name, err)
	}
	return out, nil
}

// Segments returns the loadable ranges of the file in file order.
func (f *File) Segments() []Segment {
	switch f.format {
	case ELF:
		var segs []Segment
		for _, p := range f.elf.Progs {
			if p.Type == elf.PT_LOAD {
				segs = append(segs, Segment{Addr: p.Vaddr, Size: p.Memsz, Offset: p.Off, FileSize: p.Filesz,
					Align: p.Align, Exec: p.Flags&elf.PF_X != 0})
			}
		}
		return segs
	case MachO:
		var segs []Segment
		for _, l := range f.macho.Loads {
			if s, ok := l.(*macho.Segment); ok {
				segs = append(segs, Segment{Name: s.Name, Addr: s.Addr, Size: s.Memsz, Offset: s.Offset,
					FileSize: s.Filesz, Exec: s.Prot&4 != 0})
			}
		}
		return segs
	case PE:
		var segs []Segment
		for _, s := range f.pe.Sections {
			segs = append(segs, Segment{Name: s.Name, Addr: f.id.Base + uint64(s.VirtualAddress),
				Size: uint64(s.VirtualSize), Offset: uint64(s.Offset), FileSize: uint64(s.Size),
				Exec: s.Characteristics&(pe.IMAGE_SCN_CNT_CODE|pe.IMAGE_SCN_MEM_EXECUTE) != 0})
		}
		return segs
	}
	return nil
}

// EHFrameHdr returns the .eh_frame_hdr section, which locates and indexes
// .eh_frame. In an ELF file whose section headers were stripped it is
// found through the PT_GNU_EH_FRAME program header instead. It returns nil
// when there is none.
func (f *File) EHFrameHdr() *Section {
	if s := f.Section(".eh_frame_hdr"); s != nil {
		return s
	}
	if f.format != ELF {
		return nil
	}
	for _, p := range f.elf.Progs {
		if p.Type == elf.PT_GNU_EH_FRAME && p.Filesz > 0 {
			return &Section{Name: ".eh_frame_hdr", Addr: p.Vaddr, Size: p.Filesz, Offset: p.Off,
				r: io.NewSectionReader(f.r, int64(p.Off), int64(p.Filesz))}
		}
	}
	return nil
}

// Is64 reports whether the file is for a 64-bit machine.
func (f *File) Is64() bool {
	switch f.format {
	case ELF:
		return f.elf.Class == elf.ELFCLASS64
	case MachO:
		return f.macho.Magic == macho.Magic64
	case PE:
		_, ok := f.pe.OptionalHeader.(*pe.OptionalHeader64)
		return ok
	}
	return false
}

// LittleEndian reports the file's byte order.
func (f *File) LittleEndian() bool {
	switch f.format {
	case ELF:
		return f.elf.Data == elf.ELFDATA2LSB
	case MachO:
		return f.macho.ByteOrder == binary.LittleEndian
	}
	return true // PE
}

// Relocatable reports whether the file is an unlinked object (ELF
// ET_REL, Mach-O MH_OBJECT), whose addresses start at 0 in each file.
func (f *File) Relocatable() bool {
	switch f.format {
	case ELF:
		return f.elf.Type == elf.ET_REL
	case MachO:
		return f.macho.Type == macho.TypeObj
	}
	return false
}

// HasDWARF reports whether the file itself carries DWARF debug info.
func (f *File) HasDWARF() bool {
	s := f.Section(".debug_info")
	if s == nil {
		s = f.Section(".zdebug_info")
	}
	return s != nil && s.Size > 0 && (s.r != nil || s.data != nil)
}

// DWARF returns the file's DWARF data.
func (f *File) DWARF() (*dwarf.Data, error) {
	var d *dwarf.Data
	var err error
	switch f.format {
	case ELF:
		d, err = f.elf.DWARF()
	case MachO:
		d, err = f.macho.DWARF()
	case PE:
		d, err = f.pe.DWARF()
	}
	if err != nil {
		return nil, fmt.Errorf("objfile: %s: read DWARF: %w", f.path, err)
	}
	return d, nil
}

// UnwindSections names the sections with unwind information the file
// has: .eh_frame, .debug_frame, .pdata, __unwind_info.
func (f *File) UnwindSections() []string {
	var names []string
	for _, n := range []string{".eh_frame", ".debug_frame", ".pdata", "__unwind_info", "__compact_unwind"} {
		if s := f.Section(n); s != nil && s.Size > 0 {
			names = append(names, s.Name)
		}
	}
	return names
}

// PDB returns a PE file's CodeView record, which names its PDB.
func (f *File) PDB() (PDBInfo, bool) {
	if f.pdb == nil {
		return PDBInfo{}, false
	}
	return *f.pdb, true
}

// Symbols returns the file's function symbols sorted by address, one per
// address: ELF .symtab and .dynsym, Mach-O's symbol table (without the
// leading underscore C names carry there), PE's COFF symbols and exports.
func (f *File) Symbols() ([]Symbol, error) {
	var syms []Symbol
	var err error
	switch f.format {
	case ELF:
		syms = f.elfSymbols()
	case MachO:
		syms = f.machoSymbols()
	case PE:
		syms, err = f.peSymbols()
	}
	return finishSymbols(syms, f.sections), err
}

// SymbolTable returns the file's function symbols as its tables list them,
// by the same rules as Symbols but neither sorted, deduplicated nor sized:
// for callers that merge them with symbols from elsewhere (a separate debug
// file, PLT stubs) before finishing them their own way.
func (f *File) SymbolTable() ([]Symbol, error) {
	switch f.format {
	case ELF:
		return f.elfSymbols(), nil
	case MachO:
		return f.machoSymbols(), nil
	case PE:
		return f.peSymbols()
	}
	return nil, nil
}

// finishSymbols sorts syms, keeps one per address (a sized one over an
// unsized one, else the first) and sizes unsized symbols up to the next
// symbol or the end of their code section.
func finishSymbols(syms []Symbol, sections []*Section) []Symbol {
	sort.SliceStable(syms, func(i, j int) bool { return syms[i].Addr < syms[j].Addr })
	out := syms[:0]
	for _, s := range syms {
		if n := len(out); n > 0 && out[n-1].Addr == s.Addr {
			if out[n-1].Size == 0 && s.Size > 0 {
				out[n-1] = s
			}
			continue
		}
		out = append(out, s)
	}
	for i := range out {
		s := &out[i]
		if s.Size > 0 {
			continue
		}
		end := ^uint64(0)
		if i+1 < len(out) {
			end = out[i+1].Addr
		}
		for _, sec := range sections {
			if sec.Exec && sec.Addr <= s.Addr && s.Addr < sec.Addr+sec.Size {
				end = min(end, sec.Addr+sec.Size)
			}
		}
		if end != ^uint64(0) {
			s.Size = end - s.Addr
		}
	}
	return out
}

// baseName returns the last element of a path written with either
// separator, as PDB paths from Windows are.
func baseName(p string) string {
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] == '/' || p[i] == '\\' {
			return p[i+1:]
		}
	}
	return p
}

// ReadCode returns up to size bytes of the code at SVMA addr, from the
// executable segment that holds it.
func (f *File) ReadCode(addr, size uint64) ([]byte, error) {
	for _, s := range f.Segments() {
		if !s.Exec || addr < s.Addr || addr >= s.Addr+s.FileSize {
			continue
		}
		n := min(size, s.Addr+s.FileSize-addr)
		buf := make([]byte, n)
		if _, err := f.r.ReadAt(buf, int64(s.Offset+addr-s.Addr)); err != nil && err != io.EOF {
			return nil, err
		}
		return buf, nil
	}
	return nil, fmt.Errorf("address %#x is not in an executable segment", addr)
}
