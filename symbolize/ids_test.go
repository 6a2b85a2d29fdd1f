package symbolize

import (
	"debug/elf"
	"encoding/binary"
	"encoding/hex"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gprof-dev/gprof/objfile"
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

var readelfBuildID = regexp.MustCompile(`Build ID: ([0-9a-f]+)`)

func TestIdentitySystemFiles(t *testing.T) {
	for _, path := range []string{"/usr/lib/x86_64-linux-gnu/libc.so.6", "/usr/bin/ls"} {
		t.Run(filepath.Base(path), func(t *testing.T) {
			systemFile(t, path)
			m := readelfBuildID.FindStringSubmatch(run(t, "readelf", "-n", path))
			if m == nil {
				t.Skipf("%s has no build-id", path)
			}
			b, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			id := b.Identity()
			if id.CodeID != m[1] {
				t.Errorf("CodeID = %s, want %s", id.CodeID, m[1])
			}
			// Compute the GUID by string surgery rather than byte swaps.
			h := strings.ToUpper(m[1])
			want := h[6:8] + h[4:6] + h[2:4] + h[0:2] + h[10:12] + h[8:10] + h[14:16] + h[12:14] + h[16:32] + "0"
			if id.BreakpadID != want {
				t.Errorf("BreakpadID = %s, want %s", id.BreakpadID, want)
			}
			if id.DebugName != filepath.Base(path) || id.DebugPath != path || id.Arch != "x86_64" {
				t.Errorf("identity = %+v", id)
			}
			if id.Base != 0 {
				t.Errorf("Base = %#x, want 0 for a PIE/DSO", id.Base)
			}
		})
	}
}

func TestIdentityTextHash(t *testing.T) {
	bin := build(t, "nobuildid", "gcc", "-O2", "-Wl,--build-id=none", "-o", "OUT", "TESTDATA/prog.c")
	text := bin + ".text"
	run(t, "objcopy", "-O", "binary", "--only-section=.text", bin, text)
	data, err := os.ReadFile(text)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) > 4096 {
		data = data[:4096]
	}
	// Sum the columns of a 16-wide table of the first page instead of
	// folding byte by byte.
	var want strings.Builder
	var cols [16]byte
	for row := 0; row*16 < len(data); row++ {
		for c := 0; c < 16 && row*16+c < len(data); c++ {
			cols[c] ^= data[row*16+c]
		}
	}
	le := func(b []byte) string { return strings.ToUpper(hex.EncodeToString(b)) }
	want.WriteString(le([]byte{cols[3], cols[2], cols[1], cols[0], cols[5], cols[4], cols[7], cols[6]}))
	want.WriteString(le(cols[8:]))
	want.WriteString("0")

	b, err := Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	id := b.Identity()
	if id.BreakpadID != want.String() || id.CodeID != "" || id.BuildID != nil {
		t.Errorf("identity = %+v, want BreakpadID %s and no code ID", id, want.String())
	}
}

func TestOpenAltPath(t *testing.T) {
	bin := build(t, "prog", "gcc", "-g", "-O2", "-o", "OUT", "TESTDATA/prog.c")
	b, err := Open(filepath.Join(t.TempDir(), "gone"), AltPaths("", bin))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if b.OpenedPath() != bin || b.Identity().DebugName != "gone" || b.Identity().CodeID == "" {
		t.Errorf("opened %s, identity %+v", b.OpenedPath(), b.Identity())
	}
	if _, err := Open(filepath.Join(t.TempDir(), "gone")); err == nil {
		t.Error("Open of a missing file succeeded")
	}
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
		if got := objfile.ELFLibOffset(tt.start, tt.off, tt.typ, tt.loads); got != tt.want {
			t.Errorf("%s: LibOffset = %#x, want %#x", tt.name, got, tt.want)
		}
	}
}
