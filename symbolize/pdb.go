package symbolize

// The PDB reader (package pdb) behind the OpenPDB hook: a PE file's
// CodeView record names its PDB and the GUID and age the PDB must carry.

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/gprof-dev/gprof/objfile"
	"github.com/gprof-dev/gprof/pdb"
)

func init() { OpenPDB = openPDB }

// pdbSymbolizer answers lookups of image-relative addresses (RVAs) from
// a PDB.
type pdbSymbolizer struct {
	f    *pdb.File
	path string
}

func (p *pdbSymbolizer) Lookup(relAddr uint64) []Frame {
	if relAddr > 1<<32-1 {
		return nil
	}
	s, ok := p.f.Lookup(uint32(relAddr))
	if !ok {
		return nil
	}
	return []Frame{{Function: s.Name, FuncAddr: uint64(s.RVA), File: s.File, Line: s.Line}}
}

func (p *pdbSymbolizer) DebugFile() string { return p.path }
func (p *pdbSymbolizer) Close() error      { return nil }

// openPDB finds the PDB of f whose GUID and age match its CodeView
// record: by the record's file name next to the binary, in each symbol
// directory (flat, or in a symbol server's NAME/ID/NAME layout), and at
// the recorded path itself.
func openPDB(f *objfile.File, info objfile.PDBInfo, symbolDirs []string) (Symbolizer, error) {
	name := info.Path
	if i := strings.LastIndexAny(name, `\/`); i >= 0 {
		name = name[i+1:]
	}
	binPath := f.Identity().Path
	if name == "" {
		name = strings.TrimSuffix(filepath.Base(binPath), filepath.Ext(binPath)) + ".pdb"
	}
	id := pdbID(info)
	var cands []string
	if binPath != "" {
		cands = append(cands, filepath.Join(filepath.Dir(binPath), name))
	}
	for _, d := range symbolDirs {
		cands = append(cands, filepath.Join(d, name), filepath.Join(d, name, id, name))
	}
	if info.Path != "" && filepath.IsAbs(info.Path) {
		cands = append(cands, info.Path)
	}
	var mismatched []string
	for _, c := range cands {
		if _, err := os.Stat(c); err != nil {
			continue
		}
		p, err := pdb.Open(c)
		if err != nil {
			mismatched = append(mismatched, c+" ("+err.Error()+")")
			continue
		}
		if p.GUID != info.GUID || p.Age != info.Age {
			mismatched = append(mismatched, c+" (PDB "+p.BreakpadID()+")")
			continue
		}
		return &pdbSymbolizer{f: p, path: c}, nil
	}
	if len(mismatched) > 0 {
		return nil, fmt.Errorf("no PDB %s matches %s: %s", id, name, strings.Join(mismatched, ", "))
	}
	return nil, fmt.Errorf("no PDB %s (%s) next to the binary or in the symbol directories", name, id)
}

// pdbID is the PDB's identity as symbol servers file it: the GUID as
// Windows prints it, without dashes, then the age in hex.
func pdbID(info objfile.PDBInfo) string {
	g := info.GUID
	return fmt.Sprintf("%02X%02X%02X%02X%02X%02X%02X%02X%X%x",
		g[3], g[2], g[1], g[0], g[5], g[4], g[7], g[6], g[8:], info.Age)
}
