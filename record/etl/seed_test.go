package etl

import (
	"bytes"
	"encoding/binary"
	"os"
	"testing"

	"github.com/gprof-dev/gprof/etwevent/etwtest"

	"github.com/gprof-dev/gprof/etwevent"
)

// smallETL cuts the PerfView trace to a fuzzing seed around one process
// (pid): the header buffer as is, then each buffer that holds events of
// that process, written back uncompressed (so that the fuzzer mutates
// events, not an XPRESS stream) with only those events: the process's
// own and its threads', up to quota of its images (each with the identity
// events before it), samples of its threads (with their stacks, and the
// cached stacks those name) and of each other kind. Every event is the trace's
// own, bytes unchanged.
func smallETL(data []byte, pid int64, quota int) []byte {
	le := binary.LittleEndian
	const hdrSize = 0x48
	type ev struct {
		raw []byte
		e   etwevent.Event
		k   etwevent.Kind
	}
	type buffer struct {
		hdr    []byte
		flags  uint16
		events []ev
	}
	var head []byte
	var bufs []buffer
	for off, n := 0, 0; off+hdrSize <= len(data); n++ {
		hdr := data[off : off+hdrSize]
		size := int(le.Uint32(hdr))
		if size < hdrSize || off+size > len(data) {
			break
		}
		body := data[off+hdrSize : off+size]
		off += size
		if n == 0 {
			head = data[:size]
			continue
		}
		saved := int(le.Uint32(hdr[4:]))
		flags := le.Uint16(hdr[0x34:])
		events := body
		if flags&0x40 != 0 {
			var err error
			if events, err = etwevent.AppendXpress(nil, body, saved-hdrSize); err != nil {
				continue
			}
		} else if saved > hdrSize && saved <= size {
			events = body[:saved-hdrSize]
		}
		b := buffer{hdr: hdr, flags: flags}
		for p := 0; p < len(events); {
			e, n, ok := etwevent.ParseEvent(events[p:])
			if !ok || n <= 0 {
				break
			}
			b.events = append(b.events, ev{events[p : p+n], e, etwevent.KindOf(&e)})
			p += n
		}
		bufs = append(bufs, b)
	}
	// The process's threads.
	tids := map[uint32]bool{}
	for _, b := range bufs {
		for _, x := range b.events {
			switch x.k {
			case etwevent.KindThreadStart, etwevent.KindThreadEnd, etwevent.KindThreadRundown:
				if t, ok := etwevent.DecodeThread(x.e.Payload, x.e.Ptr64, x.e.Version); ok && int64(t.PID) == pid {
					tids[t.TID] = true
				}
			}
		}
	}
	taken := map[etwevent.Kind]int{}
	take := func(k etwevent.Kind) bool {
		if taken[k] >= quota {
			return false
		}
		taken[k]++
		return true
	}
	sampled := map[[2]int64]bool{} // tid, time
	kept := make([][]bool, len(bufs))
	var out []byte
	out = append(out, head...)
	for bi, b := range bufs {
		keep := make([]bool, len(b.events))
		for i, x := range b.events {
			switch x.k {
			case etwevent.KindOther:
			case etwevent.KindProcessStart, etwevent.KindProcessEnd, etwevent.KindProcessRundown:
				pr, ok := etwevent.DecodeProcess(x.e.Payload, x.e.Ptr64, x.e.Version)
				keep[i] = ok && int64(pr.PID) == pid
			case etwevent.KindThreadStart, etwevent.KindThreadEnd, etwevent.KindThreadRundown:
				t, ok := etwevent.DecodeThread(x.e.Payload, x.e.Ptr64, x.e.Version)
				keep[i] = ok && int64(t.PID) == pid
			case etwevent.KindImageLoad, etwevent.KindImageUnload, etwevent.KindImageRundown:
				im, ok := etwevent.DecodeImage(x.e.Payload, x.e.Ptr64)
				if keep[i] = ok && int64(im.PID) == pid && take(x.k); keep[i] {
					for j := i - 1; j >= 0 && j >= i-2 && (b.events[j].k == etwevent.KindImageID || b.events[j].k == etwevent.KindDbgIDRSDS); j-- {
						keep[j] = true
					}
				}
			case etwevent.KindImageID, etwevent.KindDbgIDRSDS:
				// with their image
			case etwevent.KindSample:
				sm, ok := etwevent.DecodeSample(x.e.Payload, x.e.Ptr64)
				if keep[i] = ok && tids[sm.TID] && take(x.k); keep[i] {
					sampled[[2]int64{int64(sm.TID), x.e.Time}] = true
				}
			case etwevent.KindStack, etwevent.KindStackKeyKernel, etwevent.KindStackKeyUser:
				// The stacks of the samples kept, below.
			case etwevent.KindStackKeyDef:
				// The cached stacks those reference, below.
			case etwevent.KindCLRMethodLoad, etwevent.KindCLRMethodUnload:
				keep[i] = x.e.PID == pid && take(x.k)
			default:
				keep[i] = take(x.k)
			}
		}
		kept[bi] = keep
	}
	// The stacks of the samples kept, and the cached stacks they name.
	keys := map[uint64]bool{}
	for bi, b := range bufs {
		for i, x := range b.events {
			switch x.k {
			case etwevent.KindStack, etwevent.KindStackKeyKernel, etwevent.KindStackKeyUser:
				st, ok := etwevent.DecodeStackKeyRef(x.e.Payload, x.e.Ptr64)
				if ok && sampled[[2]int64{int64(st.TID), st.SampleTime}] {
					kept[bi][i] = true
					if x.k != etwevent.KindStack {
						keys[st.Key] = true
					}
				}
			}
		}
	}
	for bi, b := range bufs {
		for i, x := range b.events {
			if x.k == etwevent.KindStackKeyDef {
				if key, _, ok := etwevent.DecodeStackKeyDef(x.e.Payload, x.e.Ptr64); ok && keys[key] {
					kept[bi][i] = true
				}
			}
		}
	}
	for bi, b := range bufs {
		keep := kept[bi]
		var body []byte
		for i, x := range b.events {
			if keep[i] {
				body = append(body, x.raw...)
			}
		}
		if len(body) == 0 {
			continue
		}
		h := bytes.Clone(b.hdr)
		total := hdrSize + len(body)
		le.PutUint32(h[0:], uint32(total))
		le.PutUint32(h[4:], uint32(total))
		le.PutUint32(h[8:], uint32(total))
		le.PutUint16(h[0x34:], b.flags&^0x40)
		out = append(out, h...)
		out = append(out, body...)
	}
	return out
}

// TestSmallETL: the fuzzing seed etwevent/testdata/small.etl is what smallETL
// cuts from the PerfView trace (GPROF_WRITE_SEEDS=1 writes it again), and
// it reads as a profile with samples, stacks and identified images, so
// that fuzzing it reaches the whole reader.
func TestSmallETL(t *testing.T) {
	cut := smallETL(etwtest.PerfViewTrace(t), 3644, 12)
	if os.Getenv("GPROF_WRITE_SEEDS") == "1" {
		if err := os.WriteFile("../../etwevent/testdata/small.etl", cut, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	seed, err := os.ReadFile("../../etwevent/testdata/small.etl")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(seed, cut) {
		t.Error("etwevent/testdata/small.etl is not what smallETL cuts now: GPROF_WRITE_SEEDS=1 go test -run TestSmallETL ./record/etl")
	}
	p, err := Read(bytes.NewReader(seed))
	if err != nil {
		t.Fatal(err)
	}
	samples, frames, ids := 0, 0, 0
	for _, pr := range p.Processes {
		for _, th := range pr.Threads {
			samples += th.Samples.Len()
			frames += th.Frames.Len()
		}
		for _, l := range pr.Libs {
			if l.CodeID != "" {
				ids++
			}
		}
	}
	t.Logf("small.etl: %d bytes, %d processes, %d samples, %d frames, %d identified images", len(seed), len(p.Processes), samples, frames, ids)
	if samples == 0 || frames <= samples || ids == 0 || len(seed) > 48<<10 {
		t.Errorf("the seed does not reach deep: %d samples, %d frames, %d identified images, %d bytes", samples, frames, ids, len(seed))
	}
}
