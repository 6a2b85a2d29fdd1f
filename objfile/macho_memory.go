package objfile

// Mach-O identity from memory. The macOS backend reads each loaded image's
// Mach-O header and load commands out of the target (most system libraries
// live only in the dyld shared cache, with no file of their own on disk)
// and identifies the image from those bytes alone.

import (
	"bytes"
	"debug/macho"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"strings"
)

// MachHeaderSize64 is the size of mach_header_64; the load commands follow.
const MachHeaderSize64 = 32

// MachOSizeOfCmds returns the size of the header plus load commands of a
// 64-bit Mach-O header, so the caller knows how much to read.
func MachOSizeOfCmds(hdr []byte) (int, error) {
	if len(hdr) < MachHeaderSize64 {
		return 0, fmt.Errorf("mach header: %d bytes", len(hdr))
	}
	if m := binary.LittleEndian.Uint32(hdr); m != macho.Magic64 {
		return 0, fmt.Errorf("mach header: magic %#x is not a little-endian 64-bit Mach-O", m)
	}
	n := int(binary.LittleEndian.Uint32(hdr[20:]))
	if n > 1<<20 {
		return 0, fmt.Errorf("mach header: %d bytes of load commands", n)
	}
	return MachHeaderSize64 + n, nil
}

// MachOImage is the identity and text range of a Mach-O image as loaded.
type MachOImage struct {
	UUID [16]byte
	Arch string // "arm64", "arm64e", "x86_64"
	// TextAddr and TextSize are __TEXT's address and size as linked; the
	// image's slide is its load address minus TextAddr.
	TextAddr, TextSize uint64
	Type               macho.Type
	// HeaderSize is the size of the mach header and its load commands:
	// what MachOSizeOfCmds says to read.
	HeaderSize int
}

// MachOFromMemory identifies a Mach-O image from its header and load
// commands (as read from the target: the first MachOSizeOfCmds bytes at its
// load address). The load commands are walked here rather than through
// debug/macho.NewFile, which also reads the symbol and string tables at
// their file offsets: those are not in a header read from memory, and for
// a shared cache library they are offsets into the cache, not the image.
func MachOFromMemory(hdr []byte) (MachOImage, error) {
	n, err := MachOSizeOfCmds(hdr)
	if err != nil {
		return MachOImage{}, err
	}
	if len(hdr) < n {
		return MachOImage{}, fmt.Errorf("mach header: %d bytes of %d", len(hdr), n)
	}
	var fh macho.FileHeader
	if err := binary.Read(bytes.NewReader(hdr), binary.LittleEndian, &fh); err != nil {
		return MachOImage{}, fmt.Errorf("mach header: %w", err)
	}
	img := MachOImage{Arch: machOArch(fh.Cpu, fh.SubCpu), Type: fh.Type, HeaderSize: n}
	var haveText, haveUUID bool
	cmds := hdr[MachHeaderSize64:n]
	for i := uint32(0); i < fh.Ncmd; i++ {
		if len(cmds) < 8 {
			return MachOImage{}, fmt.Errorf("mach header: load command %d is cut short", i)
		}
		cmd, size := macho.LoadCmd(binary.LittleEndian.Uint32(cmds)), binary.LittleEndian.Uint32(cmds[4:])
		if size < 8 || int(size) > len(cmds) {
			return MachOImage{}, fmt.Errorf("mach header: load command %d has size %d", i, size)
		}
		c := cmds[:size]
		switch {
		case cmd == macho.LoadCmdSegment64 && size >= 72:
			if cString(c[8:24]) == "__TEXT" {
				img.TextAddr, img.TextSize = binary.LittleEndian.Uint64(c[24:]), binary.LittleEndian.Uint64(c[32:])
				haveText = true
			}
		case cmd == loadCmdUUID && size >= 24:
			copy(img.UUID[:], c[8:24])
			haveUUID = true
		}
		cmds = cmds[size:]
	}
	if !haveText {
		return MachOImage{}, fmt.Errorf("mach header: no __TEXT segment")
	}
	if !haveUUID {
		return img, fmt.Errorf("mach header: no LC_UUID")
	}
	return img, nil
}

// MachOImage returns what MachOFromMemory reads from a loaded image's
// header, here read from a whole 64-bit Mach-O file by debug/macho: for
// checking one against the other, and for callers that have the file. ok is
// false for other files, and for Mach-O files without __TEXT or LC_UUID.
func (f *File) MachOImage() (img MachOImage, ok bool) {
	mf := f.macho
	if mf == nil || mf.Magic != macho.Magic64 {
		return img, false
	}
	seg := mf.Segment("__TEXT")
	uuid := machoUUID(mf)
	if seg == nil || uuid == nil {
		return img, false
	}
	img = MachOImage{Arch: machOArch(mf.Cpu, mf.SubCpu), TextAddr: seg.Addr, TextSize: seg.Memsz, Type: mf.Type,
		HeaderSize: MachHeaderSize64 + int(mf.Cmdsz)}
	copy(img.UUID[:], uuid)
	return img, true
}

// Identity is the identity of the image, known by path, as Open gives it
// for the image's file: for an image with no file of its own (a library
// in the dyld shared cache), what profiles and symbol servers know it by.
func (img MachOImage) Identity(path string) Identity {
	return Identity{
		Format:     MachO,
		Name:       filepath.Base(path),
		Path:       path,
		DebugName:  filepath.Base(path),
		DebugPath:  path,
		BreakpadID: img.BreakpadID(),
		CodeID:     img.CodeID(),
		BuildID:    append([]byte(nil), img.UUID[:]...),
		Arch:       img.Arch,
		Base:       img.TextAddr,
	}
}

// loadCmdUUID is LC_UUID, which debug/macho does not name.
const loadCmdUUID macho.LoadCmd = 0x1b

// BreakpadID is the debug ID symbol servers name a Mach-O image by: its
// UUID's bytes in order, in uppercase hex, then the age "0". (Unlike ELF
// build IDs, Mach-O UUIDs are not byte-swapped.)
func (img MachOImage) BreakpadID() string {
	return strings.ToUpper(hex.EncodeToString(img.UUID[:])) + "0"
}

// CodeID is the UUID in uppercase hex without dashes, as the Firefox
// Profiler and samply write a Mach-O code ID.
func (img MachOImage) CodeID() string {
	return strings.ToUpper(hex.EncodeToString(img.UUID[:]))
}

// cString is the NUL-terminated string at the start of b (a fixed-size
// name field of a load command).
func cString(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		return string(b[:i])
	}
	return string(b)
}
