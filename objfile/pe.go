package objfile

import (
	"debug/pe"
	"encoding/binary"
	"fmt"
	"path/filepath"
	"strings"
)

const (
	peDirExport = 0
	peDirDebug  = 6

	peDebugCodeView = 2
)

func (f *File) openPE() error {
	pf, err := pe.NewFile(f.r)
	if err != nil {
		return fmt.Errorf("objfile: %s: %w", f.path, err)
	}
	f.pe = pf
	var imageBase uint64
	var sizeOfImage uint32
	switch oh := pf.OptionalHeader.(type) {
	case *pe.OptionalHeader64:
		imageBase, sizeOfImage = oh.ImageBase, oh.SizeOfImage
	case *pe.OptionalHeader32:
		imageBase, sizeOfImage = uint64(oh.ImageBase), oh.SizeOfImage
	}
	for _, s := range pf.Sections {
		size := uint64(s.VirtualSize)
		if size == 0 {
			size = uint64(s.Size)
		}
		sec := &Section{Name: s.Name, Addr: imageBase + uint64(s.VirtualAddress), Size: size,
			Offset: uint64(s.Offset),
			Exec:   s.Characteristics&(pe.IMAGE_SCN_CNT_CODE|pe.IMAGE_SCN_MEM_EXECUTE) != 0,
			Alloc:  s.Characteristics&pe.IMAGE_SCN_MEM_DISCARDABLE == 0}
		if s.Size > 0 {
			s := s
			sec.data = func() ([]byte, error) {
				b, err := s.Data()
				if err != nil {
					return nil, fmt.Errorf("objfile: read section %s: %w", s.Name, err)
				}
				// The raw data is padded to the file alignment; what
				// is mapped ends at VirtualSize.
				if s.VirtualSize != 0 && uint64(s.VirtualSize) < uint64(len(b)) {
					b = b[:s.VirtualSize]
				}
				return b, nil
			}
			sec.r = s
		}
		f.sections = append(f.sections, sec)
	}
	id := Identity{
		Format:    PE,
		Name:      filepath.Base(f.path),
		Path:      f.path,
		DebugName: filepath.Base(f.path),
		DebugPath: f.path,
		Arch:      peArch(pf.Machine),
		Base:      imageBase,
		CodeID:    PECodeID(pf.TimeDateStamp, uint64(sizeOfImage)),
	}
	if info, ok := f.readCodeView(); ok {
		f.pdb = &info
		id.BreakpadID = PDBBreakpadID(info.GUID, info.Age)
		// MinGW's --build-id writes a record without a PDB path;
		// the file then goes by its own name.
		if info.Path != "" {
			id.DebugPath = info.Path
			id.DebugName = baseName(info.Path)
		}
	}
	f.id = id
	return nil
}

// PDBBreakpadID is the debug ID symbol servers file a PDB under, from the
// GUID and age of its CodeView record (or of a trace's DbgID_RSDS event):
// the GUID as Windows prints it (its first three fields, stored
// little-endian, byte-swapped), without dashes, in uppercase hex, then the
// age in lowercase hex.
func PDBBreakpadID(guid [16]byte, age uint32) string {
	g := guid
	swapped := [16]byte{g[3], g[2], g[1], g[0], g[5], g[4], g[7], g[6]}
	copy(swapped[8:], g[8:])
	return fmt.Sprintf("%X%x", swapped[:], age)
}

// PECodeID is the code ID symbol servers file a PE image under: its
// TimeDateStamp as %08X, then its SizeOfImage in lowercase hex. A trace
// that reports the size of the image's mapping rather than SizeOfImage
// passes that.
func PECodeID(timeDateStamp uint32, sizeOfImage uint64) string {
	return fmt.Sprintf("%08X%x", timeDateStamp, sizeOfImage)
}

// peArch names a PE machine type.
func peArch(m uint16) string {
	switch m {
	case pe.IMAGE_FILE_MACHINE_AMD64:
		return "x86_64"
	case pe.IMAGE_FILE_MACHINE_I386:
		return "x86"
	case pe.IMAGE_FILE_MACHINE_ARM64:
		return "arm64"
	case pe.IMAGE_FILE_MACHINE_ARMNT, pe.IMAGE_FILE_MACHINE_ARM:
		return "arm"
	case pe.IMAGE_FILE_MACHINE_RISCV64:
		return "riscv64"
	}
	return fmt.Sprintf("pe-machine-%#x", m)
}

func (f *File) dataDirectory(i int) (pe.DataDirectory, bool) {
	var dirs []pe.DataDirectory
	switch oh := f.pe.OptionalHeader.(type) {
	case *pe.OptionalHeader64:
		dirs = oh.DataDirectory[:min(int(oh.NumberOfRvaAndSizes), 16)]
	case *pe.OptionalHeader32:
		dirs = oh.DataDirectory[:min(int(oh.NumberOfRvaAndSizes), 16)]
	}
	if i >= len(dirs) || dirs[i].VirtualAddress == 0 || dirs[i].Size == 0 {
		return pe.DataDirectory{}, false
	}
	return dirs[i], true
}

// readRVA reads n bytes at relative virtual address rva.
func (f *File) readRVA(rva, n uint32) ([]byte, bool) {
	for _, s := range f.pe.Sections {
		if s.VirtualAddress <= rva && uint64(rva)+uint64(n) <= uint64(s.VirtualAddress)+uint64(s.Size) {
			b := make([]byte, n)
			if _, err := s.ReadAt(b, int64(rva-s.VirtualAddress)); err != nil {
				return nil, false
			}
			return b, true
		}
	}
	return nil, false
}

// cString reads a NUL-terminated string at rva, up to 4096 bytes.
func (f *File) cString(rva uint32) string {
	for _, s := range f.pe.Sections {
		if s.VirtualAddress <= rva && rva < s.VirtualAddress+s.Size {
			n := min(s.VirtualAddress+s.Size-rva, 4096)
			b := make([]byte, n)
			s.ReadAt(b, int64(rva-s.VirtualAddress))
			if i := strings.IndexByte(string(b), 0); i >= 0 {
				b = b[:i]
			}
			return string(b)
		}
	}
	return ""
}

// readCodeView finds the CodeView RSDS record in the debug directory.
func (f *File) readCodeView() (PDBInfo, bool) {
	dir, ok := f.dataDirectory(peDirDebug)
	if !ok {
		return PDBInfo{}, false
	}
	const entrySize = 28
	if dir.Size > 64*entrySize {
		return PDBInfo{}, false // no linker writes that many; a damaged file
	}
	raw, ok := f.readRVA(dir.VirtualAddress, dir.Size)
	if !ok {
		return PDBInfo{}, false
	}
	for ; len(raw) >= entrySize; raw = raw[entrySize:] {
		typ := binary.LittleEndian.Uint32(raw[12:])
		size := binary.LittleEndian.Uint32(raw[16:])
		fileOff := binary.LittleEndian.Uint32(raw[24:])
		if typ != peDebugCodeView || size < 24 || size > 1<<16 {
			continue
		}
		cv := make([]byte, size)
		if _, err := f.r.ReadAt(cv, int64(fileOff)); err != nil {
			continue
		}
		if string(cv[:4]) != "RSDS" {
			continue
		}
		var info PDBInfo
		copy(info.GUID[:], cv[4:20])
		info.Age = binary.LittleEndian.Uint32(cv[20:])
		path := cv[24:]
		if i := strings.IndexByte(string(path), 0); i >= 0 {
			path = path[:i]
		}
		info.Path = string(path)
		return info, true
	}
	return PDBInfo{}, false
}

// peSymbols returns the COFF symbols in code sections (MinGW and Go keep
// them unless stripped) and the exported functions.
func (f *File) peSymbols() ([]Symbol, error) {
	var out []Symbol
	for _, s := range f.pe.Symbols {
		const classExternal, classStatic = 2, 3
		if s.SectionNumber <= 0 || int(s.SectionNumber) > len(f.sections) {
			continue
		}
		if s.StorageClass != classExternal && s.StorageClass != classStatic {
			continue
		}
		sec := f.sections[s.SectionNumber-1]
		if !sec.Exec || s.Name == "" || s.Name[0] == '.' || s.Name == sec.Name {
			continue
		}
		out = append(out, Symbol{Name: s.Name, Addr: sec.Addr + uint64(s.Value)})
	}
	exports, err := f.peExports()
	return append(out, exports...), err
}

// peExports reads the export directory's named functions, leaving out
// forwarders (exports that name a function of another DLL).
func (f *File) peExports() ([]Symbol, error) {
	dir, ok := f.dataDirectory(peDirExport)
	if !ok {
		return nil, nil
	}
	hdr, ok := f.readRVA(dir.VirtualAddress, 40)
	if !ok {
		return nil, fmt.Errorf("objfile: %s: export directory lies outside every section", f.path)
	}
	le := binary.LittleEndian
	nFuncs, nNames := le.Uint32(hdr[20:]), le.Uint32(hdr[24:])
	if nFuncs > 1<<20 || nNames > 1<<20 {
		return nil, fmt.Errorf("objfile: %s: export directory claims %d functions; the file is damaged", f.path, nFuncs)
	}
	funcs, ok1 := f.readRVA(le.Uint32(hdr[28:]), 4*nFuncs)
	names, ok2 := f.readRVA(le.Uint32(hdr[32:]), 4*nNames)
	ords, ok3 := f.readRVA(le.Uint32(hdr[36:]), 2*nNames)
	if !ok1 || !ok2 || !ok3 {
		return nil, fmt.Errorf("objfile: %s: export tables lie outside every section", f.path)
	}
	var out []Symbol
	for i := uint32(0); i < nNames; i++ {
		ord := uint32(le.Uint16(ords[2*i:]))
		if ord >= nFuncs {
			continue
		}
		rva := le.Uint32(funcs[4*ord:])
		if rva >= dir.VirtualAddress && rva < dir.VirtualAddress+dir.Size {
			continue // a forwarder: "OTHERDLL.Name"
		}
		name := f.cString(le.Uint32(names[4*i:]))
		if name == "" {
			continue
		}
		out = append(out, Symbol{Name: name, Addr: f.id.Base + uint64(rva)})
	}
	return out, nil
}

// MappedSection is a section of a PE image as the loader maps it: where
// it starts, as an address relative to the image base (RVA), and its
// bytes: the raw data, zero-extended to the section's virtual size.
type MappedSection struct {
	RVA  uint32
	Data []byte
}

// PEMappedSections returns a PE file's sections as the loader maps them,
// in file order, leaving out any whose data cannot be read; nil for other
// formats. Unwinding reads a PE image's tables by RVA from these.
func (f *File) PEMappedSections() []MappedSection {
	if f.pe == nil {
		return nil
	}
	var out []MappedSection
	for _, s := range f.pe.Sections {
		d, err := s.Data()
		if err != nil {
			continue
		}
		if n := int(s.VirtualSize); n > len(d) {
			d = append(d, make([]byte, n-len(d))...)
		}
		out = append(out, MappedSection{RVA: s.VirtualAddress, Data: d})
	}
	return out
}

// PEExceptionTable returns the RVA and size of a PE file's exception
// table (.pdata, the RUNTIME_FUNCTION entries): the exception data
// directory's entry, else the .pdata section's; size 0 if it has none. ok
// is false for other formats.
func (f *File) PEExceptionTable() (rva, size uint32, ok bool) {
	if f.pe == nil {
		return 0, 0, false
	}
	var dirs []pe.DataDirectory
	switch oh := f.pe.OptionalHeader.(type) {
	case *pe.OptionalHeader64:
		dirs = oh.DataDirectory[:min(oh.NumberOfRvaAndSizes, uint32(len(oh.DataDirectory)))]
	case *pe.OptionalHeader32:
		dirs = oh.DataDirectory[:min(oh.NumberOfRvaAndSizes, uint32(len(oh.DataDirectory)))]
	}
	if len(dirs) > pe.IMAGE_DIRECTORY_ENTRY_EXCEPTION {
		dd := dirs[pe.IMAGE_DIRECTORY_ENTRY_EXCEPTION]
		rva, size = dd.VirtualAddress, dd.Size
	}
	if size == 0 {
		if s := f.pe.Section(".pdata"); s != nil {
			rva, size = s.VirtualAddress, s.VirtualSize
		}
	}
	return rva, size, true
}

// PEHeader returns a PE file's TimeDateStamp and SizeOfImage, the two
// fields its code ID is made of (ok is false for other formats).
func (f *File) PEHeader() (timeDateStamp, sizeOfImage uint32, ok bool) {
	if f.pe == nil {
		return 0, 0, false
	}
	switch oh := f.pe.OptionalHeader.(type) {
	case *pe.OptionalHeader64:
		return f.pe.FileHeader.TimeDateStamp, oh.SizeOfImage, true
	case *pe.OptionalHeader32:
		return f.pe.FileHeader.TimeDateStamp, oh.SizeOfImage, true
	}
	return 0, 0, false
}
