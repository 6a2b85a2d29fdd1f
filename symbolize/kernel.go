package symbolize

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/gprof-dev/gprof/objfile"
)

// ErrKallsymsUnavailable reports a kernel symbol list whose addresses are
// all zero, as /proc/kallsyms reads for users kptr_restrict does not trust.
var ErrKallsymsUnavailable = errors.New("kernel symbols unavailable: /proc/kallsyms shows no addresses (needs root, or kernel.kptr_restrict=0)")

// Kallsyms is the kernel's text symbol list, parsed once.
type Kallsyms struct {
	syms []ksym // sorted by addr, one per address
}

type ksym struct {
	addr   uint64
	name   string
	module string
	global bool
}

// KernelSymbol is the kernel function covering an address. The kernel does
// not publish sizes, so Size runs to the next symbol.
type KernelSymbol struct {
	Name   string
	Module string // "" for the kernel image itself
	Addr   uint64
	Size   uint64
}

// LoadKallsyms reads /proc/kallsyms.
func LoadKallsyms() (*Kallsyms, error) {
	f, err := os.Open("/proc/kallsyms")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ParseKallsyms(f)
}

// ParseKallsyms reads a kallsyms listing: "ADDR TYPE NAME [MODULE]" per
// line, addresses in hex. Only text symbols are kept, as only code appears
// in stacks. It returns ErrKallsymsUnavailable when every address is zero.
func ParseKallsyms(r io.Reader) (*Kallsyms, error) {
	k := &Kallsyms{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	sawAny := false
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 3 || len(fields[1]) != 1 {
			continue
		}
		addr, err := strconv.ParseUint(fields[0], 16, 64)
		if err != nil {
			continue
		}
		sawAny = true
		switch fields[1][0] {
		case 't', 'T', 'w', 'W':
		default:
			continue
		}
		if addr == 0 {
			continue
		}
		s := ksym{addr: addr, name: fields[2], global: fields[1][0] == 'T' || fields[1][0] == 'W'}
		if len(fields) > 3 {
			s.module = strings.Trim(fields[3], "[]")
		}
		k.syms = append(k.syms, s)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read kallsyms: %w", err)
	}
	if len(k.syms) == 0 {
		if sawAny {
			return nil, ErrKallsymsUnavailable
		}
		return nil, errors.New("kallsyms: no symbols")
	}
	sort.SliceStable(k.syms, func(i, j int) bool { return k.syms[i].addr < k.syms[j].addr })
	// Aliases share an address; the first global name is the one a reader
	// knows (the kernel lists it first, locals such as static duplicates
	// after).
	out := k.syms[:0]
	for _, s := range k.syms {
		if n := len(out); n > 0 && out[n-1].addr == s.addr {
			if !out[n-1].global && s.global {
				out[n-1] = s
			}
			continue
		}
		out = append(out, s)
	}
	k.syms = out
	return k, nil
}

// Len returns the number of distinct symbol addresses.
func (k *Kallsyms) Len() int { return len(k.syms) }

// Lookup returns the symbol covering the absolute kernel address addr.
func (k *Kallsyms) Lookup(addr uint64) (KernelSymbol, bool) {
	if k == nil {
		return KernelSymbol{}, false
	}
	i := sort.Search(len(k.syms), func(i int) bool { return k.syms[i].addr > addr }) - 1
	if i < 0 {
		return KernelSymbol{}, false
	}
	s := k.syms[i]
	var size uint64
	if i+1 < len(k.syms) {
		size = k.syms[i+1].addr - s.addr
		// The last function of the image or of a module is followed by
		// another module far away; do not let it swallow the gap.
		if k.syms[i+1].module != s.module && size > 1<<20 {
			size = 0
		}
	}
	if size == 0 && addr-s.addr > 1<<16 {
		return KernelSymbol{}, false
	}
	return KernelSymbol{Name: s.name, Module: s.module, Addr: s.addr, Size: size}, true
}

// KernelBuildID returns the running kernel's GNU build-id from
// /sys/kernel/notes.
func KernelBuildID() ([]byte, error) {
	d, err := os.ReadFile("/sys/kernel/notes")
	if err != nil {
		return nil, err
	}
	// The notes are in the kernel's byte order, which is the host's.
	id := objfile.BuildIDFromNotes(d, binary.NativeEndian, 4)
	if id == nil {
		return nil, errors.New("/sys/kernel/notes: no build-id")
	}
	return id, nil
}
