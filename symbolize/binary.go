// Package symbolize turns instruction addresses into names: it opens
// binaries, computes the identities symbol servers key on (breakpad IDs and
// code IDs), and maps library-relative addresses to functions, source lines
// and inline chains using symbol tables, DWARF, Go's pclntab (with its
// inline tree, for Go 1.20 and later), split debug files, the kernel's
// symbol list and JIT perf maps.
//
// Addresses are library-relative as the Firefox Profiler counts them: from
// the virtual address of the binary's first PT_LOAD segment, so that
// relAddr = addr - (lib.Start - lib.Offset). Binary.Lookup answers one
// address; Profile fills a whole profile's symbol table, under the keys and
// addresses format.Process.Locate gives readers of that table.
//
// Each binary is indexed once: its symbol tables eagerly, its DWARF one
// compilation unit at a time as lookups reach them, so a query is a few
// binary searches and never a walk through .debug_info.
//
// The package only reads files; it never needs the profiled process to be
// alive, though callers may pass paths such as /proc/PID/map_files/... that
// only open while it is.
package symbolize

import (
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
)

// DefaultDebugRoot is where distributions install separate debug files.
const DefaultDebugRoot = "/usr/lib/debug"

// An Option changes how Open finds a binary and its debug information.
type Option func(*config)

type config struct {
	altPaths   []string
	symbolDirs []string
	debugRoot  string
	noDebug    bool
}

// AltPaths adds paths that open the same binary when path itself does not
// open or is no longer the file that was mapped, such as
// /proc/PID/map_files/START-END. They are tried in order after path.
func AltPaths(paths ...string) Option {
	return func(c *config) { c.altPaths = append(c.altPaths, paths...) }
}

// SymbolDirs adds directories searched for separate debug files: by
// .gnu_debuglink name, by build-id layout (DIR/.build-id/xx/rest.debug) and
// by the binary's file name. It may be given more than once.
func SymbolDirs(dirs ...string) Option {
	return func(c *config) { c.symbolDirs = append(c.symbolDirs, dirs...) }
}

// DebugRoot replaces DefaultDebugRoot; "" disables the system debug
// directory.
func DebugRoot(dir string) Option {
	return func(c *config) { c.debugRoot = dir }
}

// NoSeparateDebug stops Open from looking for separate debug files.
func NoSeparateDebug() Option {
	return func(c *config) { c.noDebug = true }
}

// Binary is an opened ELF file. Its methods are safe for concurrent use.
type Binary struct {
	path     string // the path the caller named
	openPath string // the path that actually opened
	f        *os.File
	elf      *elf.File
	cfg      config

	idOnce sync.Once
	id     Identity

	idxOnce sync.Once
	idx     *index
	idxErr  error
}

// Open opens the ELF file at path, or failing that the first of the
// AltPaths that opens as ELF. The identity is that of the file that opened,
// but DebugPath and DebugName still name path, as that is what the user
// knows the binary by.
func Open(path string, opts ...Option) (*Binary, error) {
	cfg := config{debugRoot: DefaultDebugRoot}
	for _, o := range opts {
		o(&cfg)
	}
	return openNamed(path, append([]string{path}, cfg.altPaths...), cfg)
}

// openNamed opens the first of paths that is ELF as the binary called name.
func openNamed(name string, paths []string, cfg config) (*Binary, error) {
	var firstErr error
	for _, p := range paths {
		if p == "" {
			continue
		}
		f, ef, err := openELF(p)
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		return &Binary{path: name, openPath: p, f: f, elf: ef, cfg: cfg}, nil
	}
	if firstErr == nil {
		firstErr = fmt.Errorf("symbolize: open %q: no path to try", name)
	}
	return nil, firstErr
}

func openELF(path string) (*os.File, *elf.File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	ef, err := elf.NewFile(f)
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("symbolize: %s: %w", path, err)
	}
	return f, ef, nil
}

// Close releases the file, and any debug file opened for it.
func (b *Binary) Close() error {
	var errs []error
	if b.idx != nil && b.idx.debugFile != nil {
		errs = append(errs, b.idx.debugFile.Close())
	}
	errs = append(errs, b.f.Close())
	return errors.Join(errs...)
}

// Path returns the path given to Open.
func (b *Binary) Path() string { return b.path }

// OpenedPath returns the path that actually opened, which differs from Path
// when an alternate path was used.
func (b *Binary) OpenedPath() string { return b.openPath }

// ELF returns the underlying parsed file.
func (b *Binary) ELF() *elf.File { return b.elf }

// Identity describes a binary the way profiles and symbol servers name it.
type Identity struct {
	// BreakpadID is the 33-character debug ID (GUID plus age "0"); empty
	// when the file has neither a build-id nor a .text section.
	BreakpadID string
	// CodeID is the GNU build-id in lowercase hex; empty when there is none.
	CodeID    string
	BuildID   []byte
	DebugName string // base name of the path
	DebugPath string
	Arch      string // "x86_64", "aarch64", ...
	// Base is the address relative addresses count from: the virtual
	// address of the first PT_LOAD segment.
	Base uint64
}

// Identity computes, once, the binary's identity.
func (b *Binary) Identity() Identity {
	b.idOnce.Do(func() { b.id = b.identity() })
	return b.id
}

func (b *Binary) identity() Identity {
	id := Identity{
		DebugName: filepath.Base(b.path),
		DebugPath: b.path,
		Arch:      Arch(b.elf.Machine),
		Base:      RelativeBase(b.elf),
	}
	little := b.elf.ByteOrder.Uint16([]byte{1, 0}) == 1
	if bid := FileBuildID(b.elf); len(bid) > 0 {
		id.BuildID = bid
		id.CodeID = fmt.Sprintf("%x", bid)
		id.BreakpadID = BreakpadID(bid, little)
		return id
	}
	if h, ok := textHash(b.elf); ok {
		id.BreakpadID = BreakpadID(h[:], little)
	}
	return id
}

// RelativeBase returns the virtual address of f's first PT_LOAD segment,
// the address lib-relative addresses count from.
func RelativeBase(f *elf.File) uint64 {
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD {
			return p.Vaddr
		}
	}
	return 0
}

// Arch names a machine the way uname -m does, which is what profiles show.
func Arch(m elf.Machine) string {
	switch m {
	case elf.EM_X86_64:
		return "x86_64"
	case elf.EM_386:
		return "x86"
	case elf.EM_AARCH64:
		return "aarch64"
	case elf.EM_ARM:
		return "arm"
	case elf.EM_RISCV:
		return "riscv64"
	case elf.EM_PPC64:
		return "ppc64"
	case elf.EM_PPC:
		return "ppc"
	case elf.EM_S390:
		return "s390x"
	case elf.EM_MIPS:
		return "mips"
	case elf.EM_LOONGARCH:
		return "loongarch64"
	}
	return fmt.Sprintf("elf-machine-%d", uint16(m))
}

// textHash is breakpad's identity for files without a build-id: the first
// page of .text folded into 16 bytes by XOR.
func textHash(f *elf.File) (h [16]byte, ok bool) {
	s := f.Section(".text")
	if s == nil || s.Type == elf.SHT_NOBITS {
		return h, false
	}
	n := min(s.Size, 4096)
	buf := make([]byte, n)
	if _, err := io.ReadFull(io.NewSectionReader(s, 0, int64(n)), buf); err != nil {
		return h, false
	}
	for i, c := range buf {
		h[i%16] ^= c
	}
	return h, true
}
