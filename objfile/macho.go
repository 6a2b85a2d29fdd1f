package objfile

import (
	"bytes"
	"debug/macho"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

const (
	lcUUID   = 0x1b
	fatMagic = 0xcafebabe
)

func isMachO(m [4]byte) bool {
	le, be := binary.LittleEndian.Uint32(m[:]), binary.BigEndian.Uint32(m[:])
	for _, v := range []uint32{le, be} {
		if v == macho.Magic32 || v == macho.Magic64 {
			return true
		}
	}
	return be == fatMagic
}

func (f *File) openMachO(cfg config) error {
	var magic [4]byte
	f.r.ReadAt(magic[:], 0)
	if binary.BigEndian.Uint32(magic[:]) != fatMagic {
		mf, err := macho.NewFile(f.r)
		if err != nil {
			return fmt.Errorf("objfile: %s: %w", f.path, err)
		}
		if cfg.uuid != nil && !bytes.Equal(machoUUID(mf), cfg.uuid) {
			return fmt.Errorf("objfile: %s: UUID %X is not the one wanted (%X)", f.path, machoUUID(mf), cfg.uuid)
		}
		f.setMachO(mf)
		return nil
	}
	ff, err := macho.NewFatFile(f.r)
	if err != nil {
		return fmt.Errorf("objfile: %s: %w", f.path, err)
	}
	var pick *macho.File
	host := map[string]string{"amd64": "x86_64", "arm64": "arm64", "386": "i386", "arm": "arm"}[runtime.GOARCH]
	for _, a := range ff.Arches {
		name := machOArch(a.Cpu, a.SubCpu)
		f.arches = append(f.arches, name)
		switch {
		case pick != nil:
		case cfg.uuid != nil:
			if bytes.Equal(machoUUID(a.File), cfg.uuid) {
				pick = a.File
			}
		case cfg.arch != "":
			if name == cfg.arch {
				pick = a.File
			}
		case name == host:
			pick = a.File
		}
	}
	if pick == nil {
		switch {
		case cfg.uuid != nil:
			return fmt.Errorf("objfile: %s: no slice has UUID %X (slices: %s)", f.path, cfg.uuid, strings.Join(f.arches, ", "))
		case cfg.arch != "":
			return fmt.Errorf("objfile: %s: no %s slice (slices: %s); pick one of those", f.path, cfg.arch, strings.Join(f.arches, ", "))
		case len(ff.Arches) == 0:
			return fmt.Errorf("objfile: %s: fat file without slices", f.path)
		}
		pick = ff.Arches[0].File
	}
	f.setMachO(pick)
	return nil
}

func (f *File) setMachO(mf *macho.File) {
	f.macho = mf
	for _, s := range mf.Sections {
		sec := &Section{Name: s.Name, Addr: s.Addr, Size: s.Size, Offset: uint64(s.Offset),
			Exec: s.Flags&0x80000400 != 0, Alloc: s.Seg != "__DWARF"}
		switch s.Flags & 0xff {
		case 0x1, 0xc, 0x12: // S_ZEROFILL, S_GB_ZEROFILL, S_THREAD_LOCAL_ZEROFILL
		default:
			if s.Offset != 0 || mf.Type == macho.TypeObj {
				sec.r = s
			}
		}
		f.sections = append(f.sections, sec)
	}
	id := Identity{
		Format:    MachO,
		Name:      filepath.Base(f.path),
		Path:      f.path,
		DebugName: filepath.Base(f.path),
		DebugPath: f.path,
		Arch:      machOArch(mf.Cpu, mf.SubCpu),
	}
	if seg := mf.Segment("__TEXT"); seg != nil {
		id.Base = seg.Addr
	}
	if u := machoUUID(mf); u != nil {
		id.BuildID = u
		id.CodeID = fmt.Sprintf("%X", u)
		id.BreakpadID = fmt.Sprintf("%X0", u)
	}
	f.id = id
}

// machoUUID returns the LC_UUID of mf, or nil.
func machoUUID(mf *macho.File) []byte {
	for _, l := range mf.Loads {
		raw := l.Raw()
		if len(raw) >= 24 && mf.ByteOrder.Uint32(raw) == lcUUID {
			return append([]byte(nil), raw[8:24]...)
		}
	}
	return nil
}

// machOArch names a Mach-O CPU type and subtype as Apple's tools do.
func machOArch(cpu macho.Cpu, sub uint32) string {
	sub &= 0x00ffffff
	switch cpu {
	case macho.CpuAmd64:
		if sub == 8 {
			return "x86_64h"
		}
		return "x86_64"
	case macho.CpuArm64:
		if sub == 2 {
			return "arm64e"
		}
		return "arm64"
	case macho.Cpu386:
		return "i386"
	case macho.CpuArm:
		return "arm"
	case macho.CpuPpc:
		return "ppc"
	case macho.CpuPpc64:
		return "ppc64"
	}
	return fmt.Sprintf("macho-cpu-%#x", uint32(cpu))
}

// machoSymbols returns the symbols defined in code sections, with the
// underscore the C ABI prefixes to names on Apple platforms removed.
func (f *File) machoSymbols() []Symbol {
	mf := f.macho
	if mf.Symtab == nil {
		return nil
	}
	var out []Symbol
	for _, s := range mf.Symtab.Syms {
		const nStab, nType, nSect = 0xe0, 0x0e, 0x0e
		if s.Type&nStab != 0 || s.Type&nType != nSect || s.Sect == 0 || int(s.Sect) > len(f.sections) {
			continue
		}
		if !f.sections[s.Sect-1].Exec || s.Name == "" {
			continue
		}
		name := strings.TrimPrefix(s.Name, "_")
		// Assembler-local labels and the linker's section markers are
		// not functions.
		if strings.HasPrefix(s.Name, "ltmp") || strings.HasPrefix(s.Name, "L") {
			continue
		}
		out = append(out, Symbol{Name: name, Addr: s.Value})
	}
	return out
}

// FindDSYM returns the path of the .dSYM companion of a Mach-O binary
// with UUID uuid that lives at binPath: BINARY.dSYM next to it, then
// NAME.dSYM or any other .dSYM bundle in dirs, then a plain Mach-O file
// called NAME in dirs. A candidate counts only if it has the same UUID and
// carries DWARF. It returns "" when none is found.
func FindDSYM(binPath string, uuid []byte, dirs []string) string {
	if len(uuid) == 0 {
		return ""
	}
	name := filepath.Base(binPath)
	inBundle := func(bundle string) []string {
		c := []string{filepath.Join(bundle, "Contents", "Resources", "DWARF", name)}
		more, _ := filepath.Glob(filepath.Join(bundle, "Contents", "Resources", "DWARF", "*"))
		return append(c, more...)
	}
	cands := inBundle(binPath + ".dSYM")
	for _, d := range dirs {
		cands = append(cands, inBundle(filepath.Join(d, name+".dSYM"))...)
		bundles, _ := filepath.Glob(filepath.Join(d, "*.dSYM"))
		for _, b := range bundles {
			cands = append(cands, inBundle(b)...)
		}
		cands = append(cands, filepath.Join(d, name))
	}
	seen := map[string]bool{}
	for _, c := range cands {
		if seen[c] {
			continue
		}
		seen[c] = true
		if st, err := os.Stat(c); err != nil || !st.Mode().IsRegular() {
			continue
		}
		df, err := Open(c, UUID(uuid))
		if err != nil {
			continue
		}
		ok := df.format == MachO && df.HasDWARF()
		df.Close()
		if ok {
			return c
		}
	}
	return ""
}
