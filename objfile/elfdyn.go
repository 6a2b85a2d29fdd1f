package objfile

import (
	"bytes"
	"debug/elf"
	"strings"
)

// Loading is what the dynamic loader reads in an ELF file to load what it
// needs: the loader the file names (PT_INTERP, executables only), the
// libraries it needs (DT_NEEDED), and the folders it says to look in
// first (DT_RPATH, then DT_RUNPATH; $ORIGIN left as written).
type Loading struct {
	Interp         string
	Needed         []string
	RPath, RunPath []string
}

// Loading returns what the dynamic loader reads in f; ok is false for a
// file that is not ELF.
func (f *File) Loading() (l Loading, ok bool) {
	ef := f.elf
	if ef == nil {
		return l, false
	}
	for _, p := range ef.Progs {
		if p.Type != elf.PT_INTERP {
			continue
		}
		b := make([]byte, min(p.Filesz, 4096))
		if n, _ := p.ReadAt(b, 0); n > 0 {
			l.Interp = string(bytes.TrimRight(b[:n], "\x00"))
		}
	}
	l.Needed, _ = ef.ImportedLibraries()
	split := func(tag elf.DynTag) []string {
		vals, _ := ef.DynString(tag)
		var dirs []string
		for _, v := range vals {
			for _, d := range strings.Split(v, ":") {
				if d != "" {
					dirs = append(dirs, d)
				}
			}
		}
		return dirs
	}
	l.RPath, l.RunPath = split(elf.DT_RPATH), split(elf.DT_RUNPATH)
	return l, true
}
