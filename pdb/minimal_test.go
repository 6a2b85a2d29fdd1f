package pdb

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"strings"
	"testing"
)

// minimalPDB cuts a real PDB down to what Parse reads, repacked in
// 512-byte blocks, for fuzzing seeds: the PDB info stream and the string
// table it names, the DBI stream with only the modules keep accepts (its
// other substreams emptied), those modules' symbol streams, the section
// headers, and the symbol records (publics) that keepPub accepts. Every
// byte kept is the original's.
func minimalPDB(data []byte, keep func(module string) bool, keepPub func(name string) bool) ([]byte, error) {
	m, err := openMSF(data)
	if err != nil {
		return nil, err
	}
	le := binary.LittleEndian
	streams := make([][]byte, len(m.streams))
	present := make([]bool, len(m.streams))
	use := func(i int) ([]byte, error) {
		s, err := m.stream(i)
		if err != nil || s == nil {
			return nil, errors.New("missing stream")
		}
		streams[i], present[i] = s, true
		return s, nil
	}
	info, err := use(streamPDB)
	if err != nil {
		return nil, err
	}
	if i, ok := namedStreams(info[28:])["/names"]; ok {
		use(i)
	}
	dbi, err := m.stream(streamDBI)
	if err != nil || len(dbi) < 64 {
		return nil, errors.New("no DBI stream")
	}
	size := func(off int) int { return int(le.Uint32(dbi[off:])) }
	modInfo, secContr, secMap, srcInfo, tsMap, dbgHdr, ec := size(24), size(28), size(32), size(36), size(40), size(48), size(52)
	mods := dbi[64 : 64+modInfo]
	dbg := dbi[64+modInfo+secContr+secMap+srcInfo+tsMap+ec:][:dbgHdr]
	var kept []byte
	for len(mods) >= 64 {
		rest := mods[64:]
		n1 := bytes.IndexByte(rest, 0)
		n2 := bytes.IndexByte(rest[n1+1:], 0)
		rec := mods[:min((64+n1+1+n2+1+3)&^3, len(mods))]
		mods = mods[len(rec):]
		if sym := int(le.Uint16(rec[34:])); sym != 0xFFFF && keep(string(rest[:n1])) {
			if _, err := use(sym); err == nil {
				kept = append(kept, rec...)
			}
		}
	}
	if len(dbg) >= 12 {
		if si := int(le.Uint16(dbg[10:])); si != 0xFFFF {
			use(si)
		}
	}
	if sr := int(le.Uint16(dbi[20:])); sr != 0xFFFF {
		recs, err := m.stream(sr)
		if err != nil {
			return nil, err
		}
		var out []byte
		for b := recs; len(b) >= 4; {
			n := int(le.Uint16(b))
			if n < 2 || 2+n > len(b) {
				break
			}
			if le.Uint16(b[2:]) == sPub32 && n >= 12 && keepPub(cstring(b[14:2+n])) {
				out = append(out, b[:2+n]...)
			}
			b = b[2+n:]
		}
		streams[sr], present[sr] = out, true
	}
	newDBI := append(bytes.Clone(dbi[:64]), kept...)
	newDBI = append(newDBI, dbg...)
	for off, v := range map[int]int{24: len(kept), 28: 0, 32: 0, 36: 0, 40: 0, 52: 0} {
		le.PutUint32(newDBI[off:], uint32(v))
	}
	streams[streamDBI], present[streamDBI] = newDBI, true
	return packMSF(streams, present), nil
}

// packMSF writes streams into an MSF 7.0 file of 512-byte blocks: the
// superblock, two free page map blocks, the streams, the directory and
// the block holding the directory's block numbers.
func packMSF(streams [][]byte, present []bool) []byte {
	const bs = 512
	le := binary.LittleEndian
	var blocks [][]byte
	alloc := func(b []byte) []uint32 {
		var ids []uint32
		for len(b) > 0 {
			blk := make([]byte, bs)
			n := copy(blk, b)
			b = b[n:]
			ids = append(ids, uint32(len(blocks)))
			blocks = append(blocks, blk)
		}
		return ids
	}
	blocks = append(blocks, make([]byte, bs), make([]byte, bs), make([]byte, bs))
	dir := le.AppendUint32(nil, uint32(len(streams)))
	var lists [][]uint32
	for i, s := range streams {
		if !present[i] {
			dir = le.AppendUint32(dir, 0xFFFFFFFF)
			lists = append(lists, nil)
			continue
		}
		dir = le.AppendUint32(dir, uint32(len(s)))
		lists = append(lists, alloc(s))
	}
	for _, l := range lists {
		for _, b := range l {
			dir = le.AppendUint32(dir, b)
		}
	}
	dirBlocks := alloc(dir)
	var mapBlock []byte
	for _, b := range dirBlocks {
		mapBlock = le.AppendUint32(mapBlock, b)
	}
	mapAt := alloc(mapBlock)[0]
	sb := blocks[0]
	copy(sb, msfMagic)
	le.PutUint32(sb[32:], bs)
	le.PutUint32(sb[36:], 1) // the free page map in use
	le.PutUint32(sb[40:], uint32(len(blocks)))
	le.PutUint32(sb[44:], uint32(len(dir)))
	le.PutUint32(sb[52:], mapAt)
	// Free page maps: every block in use.
	return bytes.Join(blocks, nil)
}

// TestMinimalPDB: the fuzzing seed cut from CppCon.pdb
// (testdata/minimal.pdb; GPROF_WRITE_SEEDS=1 writes it again) still
// resolves main to its function, file and line, as the whole PDB does.
func TestMinimalPDB(t *testing.T) {
	data, err := os.ReadFile(cppcon)
	if err != nil {
		t.Fatal(err)
	}
	full, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	var main Func
	for _, f := range full.Funcs {
		if f.Name == "main" {
			main = f
		}
	}
	if main.Name == "" {
		t.Fatal("no main in CppCon.pdb")
	}
	cut, err := minimalPDB(data,
		func(mod string) bool { return strings.HasSuffix(strings.ToLower(mod), "cppcon.obj") },
		func(name string) bool { return strings.Contains(name, "main") })
	if err != nil {
		t.Fatal(err)
	}
	if os.Getenv("GPROF_WRITE_SEEDS") == "1" {
		if err := os.WriteFile("testdata/minimal.pdb", cut, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	seed, err := os.ReadFile("testdata/minimal.pdb")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(seed, cut) {
		t.Error("testdata/minimal.pdb is not what minimalPDB cuts from CppCon.pdb now: GPROF_WRITE_SEEDS=1 go test -run TestMinimalPDB ./pdb")
	}
	small, err := Parse(seed)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("minimal.pdb: %d bytes (CppCon.pdb: %d), %d functions, %d publics, %d lines", len(seed), len(data), len(small.Funcs), len(small.Publics), len(small.lines))
	want, _ := full.Lookup(main.RVA + 4)
	got, ok := small.Lookup(main.RVA + 4)
	if !ok || got.Name != "main" || got.File != want.File || got.Line != want.Line || small.BreakpadID() != full.BreakpadID() {
		t.Errorf("main+4 in the cut: %+v %v, in the whole: %+v", got, ok, want)
	}
	if len(seed) > 64<<10 {
		t.Errorf("the cut is %d bytes", len(seed))
	}
}
