package view

import (
	"debug/dwarf"

	"github.com/gprof-dev/gprof/objfile"
	"github.com/gprof-dev/gprof/symbolize"
)

// compUnit is the address ranges of one DWARF compilation unit and the
// directory it was compiled in.
type compUnit struct {
	ranges [][2]uint64 // virtual addresses
	dir    string
}

// compDirs reads the compilation directories of b's DWARF (from its
// separate debug file, if it has one). Relative source paths in line
// tables, as compilers write them for sources named relatively on their
// command line, count from there.
func compDirs(b *symbolize.Binary) []compUnit {
	path := b.DebugFile()
	if path == "" {
		path = b.OpenedPath()
	}
	f, err := objfile.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	d, err := f.DWARF()
	if err != nil {
		return nil
	}
	var out []compUnit
	r := d.Reader()
	for {
		e, err := r.Next()
		if err != nil || e == nil {
			break
		}
		if e.Tag != dwarf.TagCompileUnit {
			r.SkipChildren()
			continue
		}
		dir, _ := e.Val(dwarf.AttrCompDir).(string)
		rs, err := d.Ranges(e)
		if dir != "" && err == nil && len(rs) > 0 {
			out = append(out, compUnit{ranges: rs, dir: dir})
		}
		r.SkipChildren()
	}
	return out
}

// compDir returns the compilation directory of the unit holding virtual
// address pc, or "".
func compDir(units []compUnit, pc uint64) string {
	for _, u := range units {
		for _, r := range u.ranges {
			if r[0] <= pc && pc < r[1] {
				return u.dir
			}
		}
	}
	return ""
}
