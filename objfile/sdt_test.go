package objfile

import (
	"encoding/binary"
	"testing"
)

// sdtNote lays out one .note.stapsdt note as <sys/sdt.h> does.
func sdtNote(pc, base, sema uint64, provider, name, args string) []byte {
	le := binary.LittleEndian
	desc := make([]byte, 24)
	le.PutUint64(desc, pc)
	le.PutUint64(desc[8:], base)
	le.PutUint64(desc[16:], sema)
	desc = append(desc, provider+"\x00"+name+"\x00"+args+"\x00"...)
	n := make([]byte, 12)
	le.PutUint32(n, 8)
	le.PutUint32(n[4:], uint32(len(desc)))
	le.PutUint32(n[8:], sdtNoteType)
	n = append(n, "stapsdt\x00"...)
	n = append(n, desc...)
	for len(n)%4 != 0 {
		n = append(n, 0)
	}
	return n
}

func TestParseSDTNotes(t *testing.T) {
	notes := append(sdtNote(0x14bc, 0x215c, 0x40b8, "gprof_test", "tick", ""), sdtNote(0x2000, 0x215c, 0, "libc", "setjmp", "8@%rdi -4@%esi")...)
	// Prelinked 0x1000 higher: .stapsdt.base is now at 0x315c.
	got, err := ParseSDTNotes(notes, binary.LittleEndian, true, 0x315c)
	if err != nil {
		t.Fatal(err)
	}
	want := []SDTProbe{
		{Provider: "gprof_test", Name: "tick", Addr: 0x24bc, Semaphore: 0x50b8},
		{Provider: "libc", Name: "setjmp", Addr: 0x3000, Args: "8@%rdi -4@%esi"},
	}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("probes %+v, want %+v", got, want)
	}
	if _, err := ParseSDTNotes(notes[:len(notes)-3], binary.LittleEndian, true, 0); err == nil {
		t.Error("a cut note reads")
	}
}

func FuzzParseSDTNotes(f *testing.F) {
	f.Add(sdtNote(0x14bc, 0x215c, 0x40b8, "gprof_test", "tick", ""), true)
	f.Add(sdtNote(1, 2, 3, "p", "n", "a"), false)
	f.Fuzz(func(t *testing.T, b []byte, is64 bool) {
		ParseSDTNotes(b, binary.LittleEndian, is64, 0x1000)
		ParseSDTNotes(b, binary.BigEndian, is64, 0)
	})
}
