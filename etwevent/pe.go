package etwevent

import (
	"errors"
	"io"
	"os"

	"github.com/gprof-dev/gprof/objfile"
)

// PEIdentity is what symbol servers need to know of a PE image: its
// CodeView (RSDS) record, for the PDB, and its TimeDateStamp and
// SizeOfImage, for the binary itself.
type PEIdentity struct {
	GUID          GUID
	Age           uint32
	PDBPath       string
	HasRSDS       bool
	TimeDateStamp uint32
	SizeOfImage   uint32
	Arch          string // the machine it was built for: x86_64, x86, arm64...
}

// BreakpadID is the PDB's identity, or "" without an RSDS record.
func (id PEIdentity) BreakpadID() string {
	if !id.HasRSDS {
		return ""
	}
	return BreakpadID(id.GUID, id.Age)
}

// CodeID is the binary's identity.
func (id PEIdentity) CodeID() string { return CodeID(id.TimeDateStamp, uint64(id.SizeOfImage)) }

// ReadPEIdentity reads the identity of the PE file at path: what a live
// session, which gets no KernelTraceControl events, or a trace that was not
// merged, must read from the image on disk.
func ReadPEIdentity(path string) (PEIdentity, error) {
	f, err := os.Open(path)
	if err != nil {
		return PEIdentity{}, err
	}
	defer f.Close()
	return PEIdentityOf(f)
}

// PEIdentityOf reads the identity of a PE image file, through objfile,
// the one place object files are parsed.
func PEIdentityOf(r io.ReaderAt) (PEIdentity, error) {
	var id PEIdentity
	f, err := objfile.NewFile(r, "")
	if err != nil {
		return id, err
	}
	defer f.Close()
	tds, size, ok := f.PEHeader()
	if !ok {
		return id, errors.New("not a PE file with an optional header")
	}
	id.TimeDateStamp, id.SizeOfImage = tds, size
	id.Arch = f.Identity().Arch
	if info, ok := f.PDB(); ok {
		id.GUID, id.Age, id.PDBPath, id.HasRSDS = info.GUID, info.Age, info.Path, true
	}
	return id, nil
}
