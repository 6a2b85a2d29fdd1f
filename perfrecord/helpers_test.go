package perfrecord

import (
	"encoding/binary"
	"testing"

	"github.com/gprof-dev/gprof/event"
)

// orders are the byte orders every decoding test runs in: a ring is in the
// host's, a perf.data file in its recorder's.
var orders = []struct {
	name string
	bo   byteOrder
}{{"little", binary.LittleEndian}, {"big", binary.BigEndian}}

// byteOrder is binary.LittleEndian or binary.BigEndian.
type byteOrder interface {
	binary.ByteOrder
	binary.AppendByteOrder
}

func forEachOrder(t *testing.T, test func(t *testing.T, bo byteOrder)) {
	for _, o := range orders {
		t.Run(o.name, func(t *testing.T) { test(t, o.bo) })
	}
}

// recBuf writes a record as the kernel does, in byte order bo.
type recBuf struct {
	bo byteOrder
	b  []byte
}

func newRec(bo byteOrder, typ uint32, misc uint16) *recBuf {
	r := &recBuf{bo: bo, b: make([]byte, 8, 256)}
	bo.PutUint32(r.b, typ)
	bo.PutUint16(r.b[4:], misc)
	return r
}

func (r *recBuf) u64(vs ...uint64) *recBuf {
	for _, v := range vs {
		r.b = r.bo.AppendUint64(r.b, v)
	}
	return r
}

func (r *recBuf) u32(vs ...uint32) *recBuf {
	for _, v := range vs {
		r.b = r.bo.AppendUint32(r.b, v)
	}
	return r
}

// task writes a u32 pid and a u32 tid.
func (r *recBuf) task(pid, tid int) *recBuf { return r.u32(uint32(pid), uint32(tid)) }

// cpu writes a sample's u32 cpu and u32 reserved.
func (r *recBuf) cpu(n int) *recBuf { return r.u32(uint32(n), 0) }

func (r *recBuf) raw(b []byte) *recBuf {
	r.b = append(r.b, b...)
	return r
}

// str writes s NUL-terminated, padded to 8 bytes.
func (r *recBuf) str(s string) *recBuf {
	r.b = append(r.b, s...)
	r.b = append(r.b, 0)
	for len(r.b)%8 != 0 {
		r.b = append(r.b, 0)
	}
	return r
}

// done sets the header's size and returns the record.
func (r *recBuf) done() []byte {
	r.bo.PutUint16(r.b[6:], uint16(len(r.b)))
	return r.b
}

// Sample types of the live backend: fp, and dwarf (registers and a stack
// copy besides).
const (
	fpSampleType    = SampleIP | SampleTID | SampleTime | SampleCPU | SamplePeriod | SampleCallchain
	dwarfSampleType = fpSampleType | SampleRegsUser | SampleStackUser
)

// liveFormat is the format of the live backend's cpu-clock events with
// sample type st.
func liveFormat(st uint64) Format {
	return Format{SampleType: st, SampleIDAll: true, PeriodIsTime: true}
}

// fpSample writes a sample of fpSampleType: tid 1235 of pid 1234 on cpu,
// with the given misc (cpu mode), period and user call chain.
func fpSample(bo byteOrder, misc uint16, cpu int, period uint64, user ...uint64) []byte {
	r := newRec(bo, RecordSample, misc).u64(0xffffffff81234567).task(1234, 1235).u64(1_000_000_000).cpu(cpu).u64(period)
	if len(user) == 0 {
		return r.u64(0).done()
	}
	r.u64(uint64(len(user)+1), ContextUser)
	return r.u64(user...).done()
}

// decodeAll decodes recs and returns the events they made.
func decodeAll(d *Decoder, a *Arena, recs ...[]byte) []event.Event {
	var out []event.Event
	for _, rec := range recs {
		if e := d.Decode(rec, a); e != nil {
			out = append(out, e)
		}
	}
	return out
}
