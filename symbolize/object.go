package symbolize

import (
	"debug/gosym"
	"fmt"
	"sync"

	"github.com/gprof-dev/gprof/objfile"
	"github.com/gprof-dev/gprof/symbolize/remote"
)

// Symbolizer answers lookups of lib-relative addresses in one binary.
// *Binary (ELF) and *Object (Mach-O, PE) implement it.
type Symbolizer interface {
	Lookup(relAddr uint64) []Frame
	DebugFile() string
	Close() error
}

var (
	_ Symbolizer = (*Binary)(nil)
	_ Symbolizer = (*Object)(nil)
)

// OpenPDB, when set, opens the PDB of a PE file that names one in its
// CodeView record, searching symbolDirs, and answers lookups from it. PE
// files are otherwise symbolized from their COFF symbols, exports and
// DWARF. It is the hook a PDB reader registers with.
var OpenPDB func(f *objfile.File, info objfile.PDBInfo, symbolDirs []string, rc *remote.Client) (Symbolizer, error)

// OpenPDBByID, when set, opens the PDB called name whose breakpad ID is
// id, from symbolDirs (a symbol server's layout) or rc: the way to a
// module's names when only its identity is known, as in an ETL trace
// read on another machine.
var OpenPDBByID func(name, id string, symbolDirs []string, rc *remote.Client) (Symbolizer, error)

// Object is a Mach-O or PE binary opened for lookups: symbols from its
// symbol table (and exports), lines and inline frames from DWARF in the
// file or, for Mach-O, in a .dSYM bundle with the same UUID next to it or
// in a SymbolDirs directory. Its methods are safe for concurrent use.
type Object struct {
	file *objfile.File
	// borrowed says file is the caller's (Options.Binaries), not closed
	// with the Object.
	borrowed bool
	cfg      config

	once      sync.Once
	ix        *index
	debug     *objfile.File
	debugPath string
	pdb       Symbolizer
}

// OpenObject opens the Mach-O or PE file at path; ELF files are opened
// with Open. objOpts choose the slice of a fat Mach-O file.
func OpenObject(path string, opts []Option, objOpts ...objfile.Option) (*Object, error) {
	cfg := config{debugRoot: DefaultDebugRoot}
	for _, o := range opts {
		o(&cfg)
	}
	f, err := objfile.Open(path, objOpts...)
	if err != nil {
		return nil, err
	}
	if f.Format() == objfile.ELF {
		f.Close()
		return nil, fmt.Errorf("symbolize: %s is ELF; open it with symbolize.Open", path)
	}
	return &Object{file: f, cfg: cfg}, nil
}

// File returns the opened object file.
func (o *Object) File() *objfile.File { return o.file }

// Close releases the file and any debug file opened for it.
func (o *Object) Close() error {
	if o.debug != nil {
		o.debug.Close()
	}
	if o.pdb != nil {
		o.pdb.Close()
	}
	if o.borrowed {
		return nil
	}
	return o.file.Close()
}

// DebugFile returns the path of the separate debug file in use (a .dSYM
// bundle's DWARF file, or a PDB), or "".
func (o *Object) DebugFile() string {
	o.once.Do(o.build)
	return o.debugPath
}

// Lookup is Binary.Lookup for Mach-O and PE files.
func (o *Object) Lookup(relAddr uint64) []Frame {
	o.once.Do(o.build)
	if o.pdb != nil {
		if fr := o.pdb.Lookup(relAddr); fr != nil {
			return fr
		}
	}
	frames := o.ix.lookup(relAddr)
	for i := range frames {
		if frames[i].Line < 0 {
			frames[i].Line = 0
		}
	}
	return frames
}

func (o *Object) build() {
	f := o.file
	id := f.Identity()
	ix := &index{base: id.Base, demangled: make(map[string]string)}
	o.ix = ix
	dwarfFile := f
	if !f.HasDWARF() && !o.cfg.noDebug {
		switch f.Format() {
		case objfile.MachO:
			if p := objfile.FindDSYM(id.Path, id.BuildID, o.cfg.symbolDirs); p != "" {
				if df, err := objfile.Open(p, objfile.UUID(id.BuildID)); err == nil {
					o.debug, o.debugPath, dwarfFile = df, p, df
				}
			}
		case objfile.PE:
			if info, ok := f.PDB(); ok && OpenPDB != nil {
				if s, err := OpenPDB(f, info, o.cfg.symbolDirs, o.cfg.remote); err == nil {
					o.pdb, o.debugPath = s, s.DebugFile()
				}
			}
		}
	}
	syms, _ := f.Symbols()
	if len(syms) == 0 && o.debug != nil {
		syms, _ = o.debug.Symbols()
	}
	for _, s := range syms {
		end := s.Addr + s.Size
		if s.Size == 0 {
			end = ^uint64(0)
		}
		ix.syms = append(ix.syms, symbol{addr: s.Addr, size: s.Size, end: end, name: s.Name})
	}
	if dwarfFile.HasDWARF() {
		if d, err := dwarfFile.DWARF(); err == nil {
			ix.dw = newUnitIndex(d, dwarfFile.Relocatable())
		}
	}
	ix.gotab = objectGoTable(f, ix.syms)
}

// objectGoTable reads a .gopclntab (Mach-O: __gopclntab) older than Go
// 1.20 with debug/gosym, which knows nothing of inlining.
func objectGoTable(f *objfile.File, syms []symbol) *gosym.Table {
	s := f.Section(".gopclntab")
	if s == nil {
		return nil
	}
	data, err := s.Data()
	if err != nil {
		return nil
	}
	var text uint64
	if t := f.Section(".text"); t != nil {
		text = t.Addr
	}
	for _, sym := range syms {
		if sym.name == "runtime.text" {
			text = sym.addr
			break
		}
	}
	t, err := gosym.NewTable(nil, gosym.NewLineTable(data, text))
	if err != nil {
		return nil
	}
	return t
}
