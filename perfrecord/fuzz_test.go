package perfrecord

import (
	"encoding/binary"
	"os"
	"reflect"
	"testing"

	"github.com/gprof-dev/gprof/event"
)

// tinyData is record/perfdata's smallest real recording: 'perf record -e
// cpu-clock -c 2000000 --call-graph dwarf,512' of a program that forks and
// spins in both processes (perf 6.1, x86-64), a handful of records of every
// kind.
const tinyData = "../record/perfdata/testdata/tiny.data"

// fileRecords returns the format of a perf.data file's first event and its
// data section's kernel records, reading no more of the file's header than
// that (record/perfdata reads the rest).
func fileRecords(t testing.TB, path string) (Format, [][]byte) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	bo := binary.LittleEndian
	if len(data) < 104 || string(data[:8]) != "PERFILE2" {
		t.Fatalf("%s is not a little-endian perf.data file", path)
	}
	// Header: magic, size, attr_size, attrs {offset, size}, data {offset,
	// size}; each attr is a perf_event_attr and its ids' section.
	attrSize, attrs, dataAt, dataSize := bo.Uint64(data[16:]), bo.Uint64(data[24:]), bo.Uint64(data[40:]), bo.Uint64(data[48:])
	attr := data[attrs : attrs+attrSize-16]
	f := Format{
		SampleType:  bo.Uint64(attr[24:]),
		ReadFormat:  bo.Uint64(attr[32:]),
		SampleIDAll: bo.Uint64(attr[40:])&(1<<18) != 0,
		Regs:        UserRegs("x86_64", bo.Uint64(attr[80:])),
		// cpu-clock with a fixed period
		PeriodIsTime: true,
		Period:       bo.Uint64(attr[16:]),
	}
	var recs [][]byte
	for b := data[dataAt : dataAt+dataSize]; len(b) >= 8; {
		n := int(bo.Uint16(b[6:]))
		if bo.Uint32(b) < 64 { // past 63, perf's own records
			recs = append(recs, b[:n])
		}
		b = b[n:]
	}
	return f, recs
}

// The records of a real recording decode to what 'perf script' shows of
// them: 9 samples, each with registers and a stack copy, the executable
// mappings, the fork and exits of the program's two processes.
func TestDecodeRealFile(t *testing.T) {
	f, recs := fileRecords(t, tinyData)
	d := NewDecoder(binary.LittleEndian, f)
	kinds := map[string]int{}
	for _, e := range decodeAll(d, &Arena{}, recs...) {
		switch e := e.(type) {
		case *event.Sample:
			if e.Regs == nil || e.Regs.IP == 0 || e.Regs.SP == 0 || len(e.StackCopy) == 0 || len(e.StackCopy) > 512 || e.CPUDelta != 2000000 {
				t.Errorf("sample %+v, registers %+v", e, e.Regs)
			}
			kinds["sample"]++
		case *event.Map:
			if e.Inode == 0 && len(e.BuildID) == 0 && e.Path != "[vdso]" {
				t.Errorf("mapping %+v: neither inode nor build-id", e)
			}
			kinds["map"]++
		case *event.Comm:
			kinds["comm"]++
		case *event.Fork:
			kinds["fork"]++
		case *event.Exit:
			kinds["exit"]++
		}
	}
	if kinds["sample"] != 9 || kinds["fork"] != 1 || kinds["exit"] != 2 || kinds["comm"] != 2 || kinds["map"] < 3 {
		t.Errorf("events %v; want 9 samples (perf script), a fork, two exits, two comms, the executable mappings", kinds)
	}
	if d.KernelStart == 0 {
		t.Error("no kernel mapping")
	}
}

// Fuzzing flags: how the fuzzer's byte picks a format and a decoder.
const (
	fuzzBig = 1 << iota
	fuzzSampleIDAll
	fuzzPeriodIsTime
	fuzzBranchHWIndex
	fuzzKernelIP
	fuzzReadCPU
	fuzzCallee
)

// FuzzDecode decodes a record of any format in either byte order: never a
// panic, nothing out of the record's bounds, the same events whether the
// arena copies or borrows. Its seeds are the records of a real recording
// and the live backend's own.
func FuzzDecode(f *testing.F) {
	format, recs := fileRecords(f, tinyData)
	for _, rec := range recs {
		f.Add(format.SampleType, format.ReadFormat, format.Regs.Mask, uint8(fuzzSampleIDAll|fuzzPeriodIsTime|fuzzKernelIP), rec)
	}
	for _, o := range orders {
		live := uint8(fuzzSampleIDAll | fuzzPeriodIsTime)
		if o.bo == binary.BigEndian {
			live |= fuzzBig
		}
		regs := uint64(1<<RegX86BX | 1<<RegX86BP | 1<<RegX86SP | 1<<RegX86IP | 0xf<<RegX86R12)
		_, batch := ringBatch(o.bo)
		for _, rec := range batch[9:15] { // samples, a fork and a comm
			f.Add(uint64(dwarfSampleType), uint64(0), regs, live|fuzzCallee, rec)
		}
		f.Add(uint64(fpSampleType|SampleRead), uint64(0), uint64(0), live|fuzzReadCPU,
			newRec(o.bo, RecordSample, MiscUser).u64(0x401000).task(1, 2).u64(1e9).cpu(1).u64(1e6, 5e6).u64(2, ContextUser, 0x401000).done())
	}
	f.Fuzz(func(t *testing.T, sampleType, readFormat, regsMask uint64, flags uint8, rec []byte) {
		var bo binary.ByteOrder = binary.LittleEndian
		if flags&fuzzBig != 0 {
			bo = binary.BigEndian
		}
		format := Format{
			SampleType:   sampleType,
			ReadFormat:   readFormat,
			SampleIDAll:  flags&fuzzSampleIDAll != 0,
			Regs:         UserRegs("amd64", regsMask),
			PeriodIsTime: flags&fuzzPeriodIsTime != 0,
			Period:       1e6,
		}
		if flags&fuzzBranchHWIndex != 0 {
			format.BranchSampleType = BranchHWIndex
		}
		if flags&fuzzCallee != 0 {
			format.Regs.Callee, format.Regs.NCallee = format.Regs.Index(RegX86R12), 4
		}
		decode := func(a *Arena) event.Event {
			d := NewDecoder(bo, format)
			d.KernelIP = flags&fuzzKernelIP != 0
			d.ReadCPU = flags&fuzzReadCPU != 0
			d.SwitchIDs = map[uint64]bool{77: true}
			return d.Decode(rec, a)
		}
		copied := decode(&Arena{})
		if borrowed := decode(&Arena{Borrow: true}); !reflect.DeepEqual(copied, borrowed) {
			t.Fatalf("copied %+v, borrowed %+v", copied, borrowed)
		}
		if s, ok := copied.(*event.Sample); ok {
			if s.KernelFrames > len(s.Stack) || len(s.Stack) > len(rec)/8 || len(s.StackCopy) > len(rec) {
				t.Fatalf("%d kernel frames of %d, stack copy of %d bytes, from a record of %d", s.KernelFrames, len(s.Stack), len(s.StackCopy), len(rec))
			}
		}
	})
}
