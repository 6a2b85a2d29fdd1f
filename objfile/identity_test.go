package objfile

import (
	"debug/elf"
	"encoding/binary"
	"encoding/hex"
	"testing"
)

func TestBreakpadIDWorkedExample(t *testing.T) {
	id, _ := hex.DecodeString("510d0a5c19eadf8043f203b4525be9be3dcb9554")
	if got, want := BreakpadID(id, true), "5C0A0D51EA1980DF43F203B4525BE9BE0"; got != want {
		t.Errorf("BreakpadID = %s, want %s", got, want)
	}
	if got, want := BreakpadID(id, false), "510D0A5C19EADF8043F203B4525BE9BE0"; got != want {
		t.Errorf("big-endian BreakpadID = %s, want %s", got, want)
	}
	// Short build-ids (e.g. 8-byte xxhash ones from lld) are zero-padded.
	short, _ := hex.DecodeString("0102030405060708")
	if got, want := BreakpadID(short, true), "040302010605080700000000000000000"; got != want {
		t.Errorf("short BreakpadID = %s, want %s", got, want)
	}
}

// TestPDBBreakpadID: the GUID 6048fdb6-2dcd-41c1-8835-594844ce7143, as
// stored (its first three fields little-endian), prints as Windows prints
// it, then the age in lowercase hex; the code ID is TimeDateStamp and
// SizeOfImage.
func TestPDBBreakpadID(t *testing.T) {
	g := [16]byte{0xb6, 0xfd, 0x48, 0x60, 0xcd, 0x2d, 0xc1, 0x41, 0x88, 0x35, 0x59, 0x48, 0x44, 0xce, 0x71, 0x43}
	if id := PDBBreakpadID(g, 2); id != "6048FDB62DCD41C18835594844CE71432" {
		t.Errorf("PDBBreakpadID = %s", id)
	}
	if id := PDBBreakpadID(g, 0x1a); id != "6048FDB62DCD41C18835594844CE71431a" {
		t.Errorf("PDBBreakpadID with age 0x1a = %s", id)
	}
	if c := PECodeID(0x5010acd2, 0x1be000); c != "5010ACD21be000" {
		t.Errorf("PECodeID = %s", c)
	}
	if c := PECodeID(0x0000acd2, 0x1000); c != "0000ACD21000" {
		t.Errorf("PECodeID of a small TimeDateStamp = %s", c)
	}
}

func note(order binary.AppendByteOrder, name string, typ uint32, desc []byte, align int) []byte {
	var b []byte
	b = order.AppendUint32(b, uint32(len(name)+1))
	b = order.AppendUint32(b, uint32(len(desc)))
	b = order.AppendUint32(b, typ)
	b = append(b, name...)
	b = append(b, 0)
	for len(b)%align != 0 {
		b = append(b, 0)
	}
	b = append(b, desc...)
	for len(b)%align != 0 {
		b = append(b, 0)
	}
	return b
}

func TestBuildIDFromNotes(t *testing.T) {
	id := []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20}
	for _, order := range []interface {
		binary.ByteOrder
		binary.AppendByteOrder
	}{binary.LittleEndian, binary.BigEndian} {
		for _, align := range []int{4, 8} {
			notes := note(order, "GNU", 5, []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, align)
			notes = append(notes, note(order, "Go", 3, []byte("not-gnu"), align)...)
			notes = append(notes, note(order, "GNU", 3, id, align)...)
			if got := BuildIDFromNotes(notes, order, uint64(align)); string(got) != string(id) {
				t.Errorf("%v align %d: got %x, want %x", order, align, got, id)
			}
		}
	}
	if got := BuildIDFromNotes([]byte{1, 2, 3}, binary.LittleEndian, 4); got != nil {
		t.Errorf("truncated notes gave %x", got)
	}
}

func FuzzBuildIDFromNotes(f *testing.F) {
	f.Add(note(binary.LittleEndian, "GNU", 3, []byte{1, 2, 3, 4}, 4), uint8(4))
	f.Add(note(binary.LittleEndian, "GNU", 5, []byte{1, 2, 3}, 8), uint8(8))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 3, 0, 0, 0}, uint8(4))
	f.Fuzz(func(t *testing.T, b []byte, align uint8) {
		id := BuildIDFromNotes(b, binary.LittleEndian, uint64(align))
		if len(id) > len(b) {
			t.Fatalf("build-id longer than input")
		}
	})
}

func TestLibOffset(t *testing.T) {
	// /usr/bin/ls-like PIE: four page-aligned segments, vaddr == offset.
	pie := []elf.ProgHeader{
		{Type: elf.PT_LOAD, Off: 0, Vaddr: 0, Filesz: 0x36c0, Align: 0x1000},
		{Type: elf.PT_LOAD, Off: 0x4000, Vaddr: 0x4000, Filesz: 0x15759, Align: 0x1000},
		{Type: elf.PT_LOAD, Off: 0x1a000, Vaddr: 0x1a000, Filesz: 0x8ed0, Align: 0x1000},
		{Type: elf.PT_LOAD, Off: 0x232b0, Vaddr: 0x232b0, Filesz: 0x1310, Align: 0x1000},
	}
	// A layout where vaddr and offset differ (as with lld, or a prelinked
	// or non-PIE binary): text at file 0x1000 loads at vaddr 0x401000+0x1000.
	shifted := []elf.ProgHeader{
		{Type: elf.PT_LOAD, Off: 0, Vaddr: 0x400000, Filesz: 0x800, Align: 0x1000},
		{Type: elf.PT_LOAD, Off: 0x1000, Vaddr: 0x402000, Filesz: 0x3000, Align: 0x1000},
		{Type: elf.PT_LOAD, Off: 0x4e10, Vaddr: 0x406e10, Filesz: 0x200, Align: 0x1000},
	}
	const bias = 0x7f0000000000
	tests := []struct {
		name       string
		start, off uint64
		typ        elf.Type
		loads      []elf.ProgHeader
		want       uint64
	}{
		{"pie first", bias, 0, elf.ET_DYN, pie, 0},
		{"pie text", bias + 0x4000, 0x4000, elf.ET_DYN, pie, 0x4000},
		{"pie data page", bias + 0x23000, 0x23000, elf.ET_DYN, pie, 0x23000},
		{"shifted dyn text", bias + 0x2000, 0x1000, elf.ET_DYN, shifted, 0x2000},
		{"shifted dyn data", bias + 0x6000, 0x4000, elf.ET_DYN, shifted, 0x6000},
		{"exec first", 0x400000, 0, elf.ET_EXEC, shifted, 0},
		{"exec text", 0x402000, 0x1000, elf.ET_EXEC, shifted, 0x2000},
		// A second copy of an executable's text, mapped from the file
		// away from its link address (V8 does this with node's
		// builtins): the file offset says which bytes it holds.
		{"exec text remapped", bias, 0x1000, elf.ET_EXEC, shifted, 0x2000},
		{"exec text remapped inside", bias, 0x3000, elf.ET_EXEC, shifted, 0x4000},
		{"pie text remapped", bias + 0x123000, 0x4000, elf.ET_DYN, pie, 0x4000},
	}
	for _, tt := range tests {
		if got := elfLibOffset(tt.start, tt.off, tt.typ, tt.loads); got != tt.want {
			t.Errorf("%s: LibOffset = %#x, want %#x", tt.name, got, tt.want)
		}
	}
}

// TestMachOImageOfFile: what MachOFromMemory reads from a loaded image's
// header is what debug/macho reads from the whole file, and the identity
// it makes for an image without a file is the one Open gives the file.
func TestMachOImageOfFile(t *testing.T) {
	for _, arch := range []string{"arm64", "amd64"} {
		t.Run(arch, func(t *testing.T) {
			path := goDarwin(t, arch)
			f := mustOpen(t, path)
			img, ok := f.MachOImage()
			if !ok {
				t.Fatal("no image")
			}
			hdr := make([]byte, img.HeaderSize)
			if _, err := f.r.ReadAt(hdr, 0); err != nil {
				t.Fatal(err)
			}
			if n, err := MachOSizeOfCmds(hdr); err != nil || n != img.HeaderSize {
				t.Errorf("MachOSizeOfCmds = %d, %v; want %d", n, err, img.HeaderSize)
			}
			mem, err := MachOFromMemory(hdr)
			if err != nil {
				t.Fatal(err)
			}
			if mem != img {
				t.Errorf("from memory %+v, from the file %+v", mem, img)
			}
			got, want := img.Identity(path), f.Identity()
			if got.Format != want.Format || got.Name != want.Name || got.Path != want.Path || got.DebugName != want.DebugName ||
				got.DebugPath != want.DebugPath || got.BreakpadID != want.BreakpadID || got.CodeID != want.CodeID ||
				string(got.BuildID) != string(want.BuildID) || got.Arch != want.Arch || got.Base != want.Base {
				t.Errorf("identity from memory %+v, from the file %+v", got, want)
			}
			if _, ok := mustOpen(t, gccELF(t)).MachOImage(); ok {
				t.Error("an ELF file has a Mach-O image")
			}
		})
	}
}
