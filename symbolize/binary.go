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
// addresses profile.Process.Locate gives readers of that table.
//
// Each binary is indexed once: its symbol tables eagerly, its DWARF one
// compilation unit at a time as lookups reach them, so a query is a few
// binary searches and never a walk through .debug_info.
//
// The package only reads files; it never needs the profiled process to be
// alive. A recorder, which opens each binary while its process lives,
// hands Profile the files it opened (Options.Binaries), and the JIT maps
// it read, rather than have them looked for again.
package symbolize

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"

	"github.com/gprof-dev/gprof/objfile"
	"github.com/gprof-dev/gprof/symbolize/remote"
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
	remote     *remote.Client
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

// Remote fetches the debug files (ELF, by build-id; PDBs, by GUID and
// age) that are not on this machine from the servers c names, after the
// local places. nil fetches nothing.
func Remote(c *remote.Client) Option {
	return func(cfg *config) { cfg.remote = c }
}

// NoSeparateDebug stops Open from looking for separate debug files.
func NoSeparateDebug() Option {
	return func(c *config) { c.noDebug = true }
}

// Binary is an opened ELF file. Its methods are safe for concurrent use.
type Binary struct {
	path     string // the path the caller named
	openPath string // the path that actually opened
	obj      *objfile.File
	// borrowed says obj is the caller's (Options.Binaries), not closed
	// with the Binary.
	borrowed bool
	cfg      config

	idOnce sync.Once
	id     objfile.Identity

	idxOnce sync.Once
	idx     *index
	idxErr  error
}

// Open opens the object file at path, or failing that the first of the
// AltPaths that opens as one. The identity is that of the file that opened,
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
		obj, err := objfile.Open(p)
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		if obj.Format() != objfile.ELF {
			// Binary's index reads what ELF files carry (PLT, debuglink,
			// build-id debug files); Object reads the others.
			obj.Close()
			if firstErr == nil {
				firstErr = fmt.Errorf("symbolize: %s is %s, not ELF; open it with symbolize.OpenObject", p, obj.Format())
			}
			continue
		}
		return &Binary{path: name, openPath: p, obj: obj, cfg: cfg}, nil
	}
	if firstErr == nil {
		firstErr = fmt.Errorf("symbolize: open %q: no path to try", name)
	}
	return nil, firstErr
}

// Close releases the file, and any debug file opened for it.
func (b *Binary) Close() error {
	var errs []error
	if b.idx != nil && b.idx.debugFile != nil {
		errs = append(errs, b.idx.debugFile.Close())
	}
	if !b.borrowed {
		errs = append(errs, b.obj.Close())
	}
	return errors.Join(errs...)
}

// Path returns the path given to Open.
func (b *Binary) Path() string { return b.path }

// OpenedPath returns the path that actually opened, which differs from Path
// when an alternate path was used.
func (b *Binary) OpenedPath() string { return b.openPath }

// Object returns the underlying parsed file.
func (b *Binary) Object() *objfile.File { return b.obj }

// Identity computes, once, the binary's identity: that of the file that
// opened, with DebugName and DebugPath naming the path the caller gave,
// as that is what the user knows the binary by (and where its
// .gnu_debuglink file would sit), not an alternate path that opened.
func (b *Binary) Identity() objfile.Identity {
	b.idOnce.Do(func() {
		b.id = b.obj.Identity()
		if b.id.DebugPath == b.openPath {
			b.id.DebugName, b.id.DebugPath = filepath.Base(b.path), b.path
		}
	})
	id := b.id
	id.BuildID = append([]byte(nil), b.id.BuildID...)
	return id
}
