package symbolize

// The PDB reader (package pdb) behind the OpenPDB hook: a PE file's
// CodeView record names its PDB and the GUID and age the PDB must carry.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/gprof-dev/gprof/objfile"
	"github.com/gprof-dev/gprof/pdb"
	"github.com/gprof-dev/gprof/symbolize/remote"
)

func init() {
	OpenPDB = openPDB
	OpenPDBByID = openPDBByID
}

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
// directory (flat, or in a symbol server's NAME/ID/NAME layout), at the
// recorded path itself, and last from the symbol servers rc names.
func openPDB(f *objfile.File, info objfile.PDBInfo, symbolDirs []string, rc *remote.Client) (Symbolizer, error) {
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
		// SymStore writes the age in upper case.
		cands = append(cands, filepath.Join(d, name), filepath.Join(d, name, id, name), filepath.Join(d, name, strings.ToUpper(id), name))
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
	if s, err := fetchPDB(rc, name, id); err == nil {
		return s, nil
	} else if !errors.Is(err, remote.ErrNotFound) {
		mismatched = append(mismatched, err.Error())
	}
	if len(mismatched) > 0 {
		return nil, fmt.Errorf("no PDB %s matches %s: %s", id, name, strings.Join(mismatched, ", "))
	}
	return nil, fmt.Errorf("no PDB %s (%s) next to the binary or in the symbol directories", name, id)
}

// fetchPDB fetches the PDB name with id from rc's symbol servers (or
// finds it in their cache).
func fetchPDB(rc *remote.Client, name, id string) (Symbolizer, error) {
	if rc == nil {
		return nil, remote.ErrNotFound
	}
	path, err := rc.PDB(name, id, func(tmp string) error {
		p, err := pdb.Open(tmp)
		if err != nil {
			return err
		}
		if !strings.EqualFold(p.BreakpadID(), id) {
			return fmt.Errorf("it is PDB %s, not %s", p.BreakpadID(), id)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	p, err := pdb.Open(path)
	if err != nil {
		return nil, err
	}
	if !strings.EqualFold(p.BreakpadID(), id) {
		return nil, fmt.Errorf("%s is PDB %s, not %s", path, p.BreakpadID(), id)
	}
	return &pdbSymbolizer{f: p, path: path}, nil
}

// openPDBByID finds the PDB called name with breakpad ID id (GUID and
// age) in each symbol directory's symbol-server layout, then on rc's
// symbol servers.
func openPDBByID(name, id string, symbolDirs []string, rc *remote.Client) (Symbolizer, error) {
	if i := strings.LastIndexAny(name, `\/`); i >= 0 {
		name = name[i+1:]
	}
	for _, d := range symbolDirs {
		for _, c := range []string{filepath.Join(d, name, strings.ToUpper(id), name), filepath.Join(d, name, id, name)} {
			p, err := pdb.Open(c)
			if err != nil {
				continue
			}
			if strings.EqualFold(p.BreakpadID(), id) {
				return &pdbSymbolizer{f: p, path: c}, nil
			}
		}
	}
	return fetchPDB(rc, name, id)
}

// pdbID is the PDB's identity as symbol servers file it: the GUID as
// Windows prints it, without dashes, then the age in hex.
func pdbID(info objfile.PDBInfo) string {
	g := info.GUID
	return fmt.Sprintf("%02X%02X%02X%02X%02X%02X%02X%02X%X%x",
		g[3], g[2], g[1], g[0], g[5], g[4], g[7], g[6], g[8:], info.Age)
}
