package etw

import (
	"bytes"
	"debug/pe"
	"encoding/binary"
	"errors"
	"io"
	"os"
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

// PEIdentityOf reads the identity of a PE image file.
func PEIdentityOf(r io.ReaderAt) (PEIdentity, error) {
	var id PEIdentity
	f, err := pe.NewFile(r)
	if err != nil {
		return id, err
	}
	id.TimeDateStamp = f.FileHeader.TimeDateStamp
	var dir pe.DataDirectory
	switch oh := f.OptionalHeader.(type) {
	case *pe.OptionalHeader64:
		id.SizeOfImage = oh.SizeOfImage
		if len(oh.DataDirectory) > pe.IMAGE_DIRECTORY_ENTRY_DEBUG {
			dir = oh.DataDirectory[pe.IMAGE_DIRECTORY_ENTRY_DEBUG]
		}
	case *pe.OptionalHeader32:
		id.SizeOfImage = oh.SizeOfImage
		if len(oh.DataDirectory) > pe.IMAGE_DIRECTORY_ENTRY_DEBUG {
			dir = oh.DataDirectory[pe.IMAGE_DIRECTORY_ENTRY_DEBUG]
		}
	default:
		return id, errors.New("PE file has no optional header")
	}
	if dir.Size == 0 || dir.Size > 1<<16 {
		return id, nil
	}
	// The debug directory is at an RVA; find the section holding it.
	var off int64 = -1
	for _, s := range f.Sections {
		if dir.VirtualAddress >= s.VirtualAddress && dir.VirtualAddress+dir.Size <= s.VirtualAddress+max(s.VirtualSize, s.Size) {
			off = int64(s.Offset) + int64(dir.VirtualAddress-s.VirtualAddress)
			break
		}
	}
	if off < 0 {
		return id, nil
	}
	ents := make([]byte, dir.Size)
	if _, err := r.ReadAt(ents, off); err != nil {
		return id, nil
	}
	le := binary.LittleEndian
	for e := ents; len(e) >= 28; e = e[28:] {
		if le.Uint32(e[12:]) != 2 { // IMAGE_DEBUG_TYPE_CODEVIEW
			continue
		}
		size, ptr := le.Uint32(e[16:]), le.Uint32(e[24:])
		if size < 24 || size > 1<<12 {
			continue
		}
		cv := make([]byte, size)
		if _, err := r.ReadAt(cv, int64(ptr)); err != nil || !bytes.HasPrefix(cv, []byte("RSDS")) {
			continue
		}
		copy(id.GUID[:], cv[4:20])
		id.Age = le.Uint32(cv[20:])
		path := cv[24:]
		if i := bytes.IndexByte(path, 0); i >= 0 {
			path = path[:i]
		}
		id.PDBPath = string(path)
		id.HasRSDS = true
		break
	}
	return id, nil
}
