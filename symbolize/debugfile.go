package symbolize

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"

	"github.com/gprof-dev/gprof/objfile"
	"github.com/gprof-dev/gprof/symbolize/remote"
)

// debugFile is a separate file holding a binary's symbols and DWARF.
type debugFile struct {
	obj *objfile.File
}

func (d *debugFile) Close() error { return d.obj.Close() }

// findDebugFile looks for separate debug information the ways gdb does:
// by build-id under each symbol directory and the debug root, then by
// .gnu_debuglink name next to the binary, in its .debug directory, under
// the debug root and in each symbol directory; finally by the binary's own
// file name in each symbol directory. Build-id candidates must carry the
// same build-id and debuglink candidates the recorded CRC; those that do
// not are another build's, skipped and listed in rejected, one line each.
func (b *Binary) findDebugFile() (d *debugFile, path string, rejected []string) {
	buildID := b.Identity().BuildID
	roots := append([]string(nil), b.cfg.symbolDirs...)
	if b.cfg.debugRoot != "" {
		roots = append(roots, b.cfg.debugRoot)
	}
	matchesID := func(f *objfile.File) string {
		if id := f.Identity().BuildID; !bytes.Equal(id, buildID) {
			if len(id) == 0 {
				return fmt.Sprintf("it has no build-id, and %s has %x", b.path, buildID)
			}
			return fmt.Sprintf("its build-id %x is not %s's %x", id, b.path, buildID)
		}
		return ""
	}
	try := func(p string, check func(*objfile.File) string) *debugFile {
		d, why := openDebug(p, check)
		if why != "" {
			rejected = append(rejected, fmt.Sprintf("ignored debug file %s: %s", p, why))
		}
		return d
	}
	if len(buildID) >= 2 {
		h := hex.EncodeToString(buildID)
		for _, root := range roots {
			p := filepath.Join(root, ".build-id", h[:2], h[2:]+".debug")
			if d := try(p, matchesID); d != nil {
				return d, p, rejected
			}
		}
	}
	if name, crc, ok := b.obj.DebugLink(); ok {
		dir := filepath.Dir(b.path)
		cands := []string{filepath.Join(dir, name), filepath.Join(dir, ".debug", name)}
		if b.cfg.debugRoot != "" {
			cands = append(cands, filepath.Join(b.cfg.debugRoot, dir, name))
		}
		for _, sd := range b.cfg.symbolDirs {
			cands = append(cands, filepath.Join(sd, name))
		}
		self, _ := filepath.Abs(b.openPath)
		for _, p := range cands {
			if abs, _ := filepath.Abs(p); abs == self {
				continue
			}
			matchesCRC := func(*objfile.File) string {
				if fileCRC(p) != crc {
					return fmt.Sprintf("its CRC is not the %08x %s's .gnu_debuglink records", crc, b.path)
				}
				return ""
			}
			if d := try(p, matchesCRC); d != nil {
				return d, p, rejected
			}
		}
	}
	if len(buildID) > 0 {
		for _, sd := range b.cfg.symbolDirs {
			for _, name := range []string{filepath.Base(b.path), filepath.Base(b.path) + ".debug"} {
				p := filepath.Join(sd, name)
				if d := try(p, matchesID); d != nil {
					return d, p, rejected
				}
			}
		}
	}
	if len(buildID) > 0 && b.cfg.remote != nil {
		if p, err := b.cfg.remote.DebugInfo(buildID, elfOfBuild(buildID)); err == nil {
			if d := try(p, matchesID); d != nil {
				return d, p, rejected
			}
		}
	}
	return nil, "", rejected
}

// elfOfBuild checks that a fetched file is an ELF file of build buildID,
// before it is cached.
func elfOfBuild(buildID []byte) remote.Verify {
	return func(path string) error {
		f, err := objfile.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		if f.Format() != objfile.ELF {
			return fmt.Errorf("it is %s, not ELF", f.Format())
		}
		if id := f.Identity().BuildID; !bytes.Equal(id, buildID) {
			return fmt.Errorf("its build-id is %x, not %x", id, buildID)
		}
		return nil
	}
}

// openDebug opens path as a debug file if check finds nothing wrong with
// it (else it says why) and it has DWARF or a symbol table. A path that is
// not there, or not an object file, is no candidate at all.
func openDebug(path string, check func(*objfile.File) string) (*debugFile, string) {
	f, err := objfile.Open(path)
	if err != nil {
		return nil, ""
	}
	if f.Format() != objfile.ELF {
		f.Close()
		return nil, ""
	}
	if why := check(f); why != "" {
		f.Close()
		return nil, why
	}
	if !hasDWARF(f) && f.Section(".symtab") == nil {
		f.Close()
		return nil, ""
	}
	return &debugFile{obj: f}, ""
}

func fileCRC(path string) uint32 {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	h := crc32.NewIEEE()
	if _, err := io.Copy(h, f); err != nil {
		return 0
	}
	return h.Sum32()
}
