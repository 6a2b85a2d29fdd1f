//go:build linux

package perf

import (
	"encoding/binary"
	"fmt"
	"os"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ne is the byte order of ring records: the host's.
var ne = binary.NativeEndian

// ring is one mmap'd perf ring buffer: a metadata page followed by a
// power-of-two data area the kernel writes records into. Mapping it writable
// makes it non-overwriting: the kernel drops (and counts) records rather
// than overwrite ones we have not consumed, and we publish what we consumed
// by advancing data_tail.
type ring struct {
	fd      int
	mem     []byte
	meta    *unix.PerfEventMmapPage
	data    []byte
	mask    uint64
	scratch []byte
}

// perfMmap is unix.Mmap; tests replace it to simulate the mlock limit.
var perfMmap = unix.Mmap

func mapRing(fd, pages int) (*ring, error) {
	ps := os.Getpagesize()
	mem, err := perfMmap(fd, 0, (1+pages)*ps, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, err
	}
	meta := (*unix.PerfEventMmapPage)(unsafe.Pointer(&mem[0]))
	off, size := meta.Data_offset, meta.Data_size
	if size == 0 { // kernels before 4.1
		off, size = uint64(ps), uint64(pages*ps)
	}
	if off+size > uint64(len(mem)) || size&(size-1) != 0 {
		unix.Munmap(mem)
		return nil, fmt.Errorf("perf ring: unexpected layout (offset %d, size %d)", off, size)
	}
	return &ring{fd: fd, mem: mem, meta: meta, data: mem[off : off+size], mask: size - 1}, nil
}

// touchBudget bounds the ring memory touchRings reads: 4 MiB rings on 16
// CPUs, the first quarter of each on 64.
const touchBudget = 64 << 20

// touchRings reads a byte of each page of the rings, up to touchBudget
// in all, on a goroutine of its own, and returns a channel closed when it
// is done. The reader's first read of each page of a ring was slow on a
// virtual machine, though the kernel maps the pages in advance: 1.5 µs a
// page here, 1.3-2 ms a 4 MiB ring, in the reader's time on the targets'
// CPUs as it read the first quarter second of samples. A launched
// command is released after (run): with two busy threads of a 64 ms
// program on two CPUs, the time each thread waited for the reader went
// from 1.25 to 0.70 ms a run, and the gaps over two intervals that the
// reader caused from 19 in 18 runs to 11 (bench/gapcause, interleaved).
func touchRings(rings []*ring) chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		per := touchBudget
		if len(rings) > 0 {
			per = touchBudget / len(rings)
		}
		sum := 0
		for _, r := range rings {
			sum += r.touch(per)
		}
		touchSink.Store(uint64(sum))
	}()
	return done
}

// touchSink keeps touchRings' reads from being optimized away.
var touchSink atomic.Uint64

// touch reads a byte of each page of the ring's first n bytes of data,
// and returns their sum.
func (r *ring) touch(n int) int {
	sum := 0
	ps := os.Getpagesize()
	for i := 0; i < min(n, len(r.data)); i += ps {
		sum += int(r.data[i])
	}
	return sum
}

// drain passes every complete record in the ring to fn, then releases the
// space. A record that wraps around the end is copied into a scratch buffer;
// others are passed in place, so fn must copy what it keeps. A record for
// which stop (when not nil) says so ends the drain, and it and those after
// it stay in the ring. It returns the bytes consumed.
func (r *ring) drain(fn func(rec []byte), stop func(rec []byte) bool) uint64 {
	// Loading data_head with sync/atomic orders the record reads after it
	// (the smp_rmb the uapi header asks for).
	head := atomic.LoadUint64(&r.meta.Data_head)
	start := atomic.LoadUint64(&r.meta.Data_tail)
	tail := start
	size := r.mask + 1
	for head-tail >= 8 {
		var hdr [8]byte
		r.copyOut(hdr[:], tail)
		n := uint64(ne.Uint16(hdr[6:]))
		if n < 8 || n > head-tail {
			// Corrupt or torn: skip what is there.
			tail = head
			break
		}
		off := tail & r.mask
		var rec []byte
		if off+n <= size {
			rec = r.data[off : off+n]
		} else {
			if uint64(cap(r.scratch)) < n {
				r.scratch = make([]byte, n)
			}
			rec = r.scratch[:n]
			r.copyOut(rec, tail)
		}
		if stop != nil && stop(rec) {
			break
		}
		fn(rec)
		tail += n
	}
	// The atomic store is a full barrier in Go's memory model, so all the
	// reads above happen before the kernel may reuse the space (smp_mb).
	atomic.StoreUint64(&r.meta.Data_tail, tail)
	return tail - start
}

func (r *ring) copyOut(dst []byte, pos uint64) {
	off := pos & r.mask
	n := copy(dst, r.data[off:])
	if n < len(dst) {
		copy(dst[n:], r.data)
	}
}

func (r *ring) close() {
	if r.mem != nil {
		unix.Munmap(r.mem)
		r.mem, r.data, r.meta = nil, nil, nil
	}
}
