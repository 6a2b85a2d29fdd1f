// Package pdb reads Microsoft PDB files (MSF 7.0): the identity that
// matches a PDB to its binary (GUID and age), the public symbols, the
// functions of each module's symbol stream, and C13 line tables, so an
// image-relative address (RVA) of a program built by MSVC or clang-cl
// resolves to its function, source file and line.
package pdb

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
)

var msfMagic = []byte("Microsoft C/C++ MSF 7.00\r\n\x1aDS\x00\x00\x00")

// IsPDB reports whether head starts like an MSF 7.0 file.
func IsPDB(head []byte) bool { return bytes.HasPrefix(head, msfMagic) }

// msf is the multi-stream container: a file of fixed-size blocks holding
// numbered streams.
type msf struct {
	data      []byte
	blockSize int
	streams   [][]uint32 // block numbers per stream; nil for an absent stream
	sizes     []int
}

func openMSF(data []byte) (*msf, error) {
	if !IsPDB(data) || len(data) < 56 {
		return nil, errors.New("not a PDB (MSF 7.00) file")
	}
	le := binary.LittleEndian
	m := &msf{data: data, blockSize: int(le.Uint32(data[32:]))}
	switch m.blockSize {
	case 512, 1024, 2048, 4096, 8192, 16384, 32768:
	default:
		return nil, fmt.Errorf("PDB has a bad block size %d", m.blockSize)
	}
	numBlocks := int(le.Uint32(data[40:]))
	if numBlocks*m.blockSize > len(data)+m.blockSize {
		return nil, fmt.Errorf("PDB is truncated: %d blocks of %d bytes, file of %d bytes", numBlocks, m.blockSize, len(data))
	}
	dirBytes := int(le.Uint32(data[44:]))
	mapAddr := int(le.Uint32(data[52:]))
	nDirBlocks := (dirBytes + m.blockSize - 1) / m.blockSize
	mapBlock, err := m.block(mapAddr)
	if err != nil || nDirBlocks*4 > len(mapBlock) || dirBytes <= 0 {
		return nil, errors.New("PDB stream directory is out of the file")
	}
	dirBlocks := make([]uint32, nDirBlocks)
	for i := range dirBlocks {
		dirBlocks[i] = le.Uint32(mapBlock[4*i:])
	}
	dir, err := m.read(dirBlocks, dirBytes)
	if err != nil {
		return nil, fmt.Errorf("PDB stream directory: %w", err)
	}
	if len(dir) < 4 {
		return nil, errors.New("PDB stream directory is empty")
	}
	n := int(le.Uint32(dir))
	if n > len(dir)/4 {
		return nil, errors.New("PDB stream directory is corrupt")
	}
	pos := 4 + 4*n
	m.sizes = make([]int, n)
	m.streams = make([][]uint32, n)
	for i := 0; i < n; i++ {
		sz := le.Uint32(dir[4+4*i:])
		if sz == 0xFFFFFFFF {
			continue
		}
		m.sizes[i] = int(sz)
		nb := (int(sz) + m.blockSize - 1) / m.blockSize
		if pos+4*nb > len(dir) {
			return nil, errors.New("PDB stream directory is corrupt")
		}
		bl := make([]uint32, nb)
		for j := range bl {
			bl[j] = le.Uint32(dir[pos+4*j:])
		}
		m.streams[i] = bl
		pos += 4 * nb
	}
	return m, nil
}

func (m *msf) block(i int) ([]byte, error) {
	off := i * m.blockSize
	if i < 0 || off+m.blockSize > len(m.data) {
		if off >= 0 && off < len(m.data) {
			return m.data[off:], nil // a short last block
		}
		return nil, fmt.Errorf("block %d is out of the file", i)
	}
	return m.data[off : off+m.blockSize], nil
}

func (m *msf) read(blocks []uint32, size int) ([]byte, error) {
	// Blocks are distinct, so no stream is larger than the file; a size
	// that says otherwise would only make a huge allocation.
	if size < 0 || size > len(m.data) || len(blocks) > len(m.data)/m.blockSize+1 {
		return nil, errors.New("stream is larger than the file")
	}
	out := make([]byte, 0, size)
	for _, b := range blocks {
		blk, err := m.block(int(b))
		if err != nil {
			return nil, err
		}
		n := min(size-len(out), len(blk))
		out = append(out, blk[:n]...)
	}
	if len(out) != size {
		return nil, errors.New("stream is cut short")
	}
	return out, nil
}

// stream returns stream i's bytes, or nil when it is absent.
func (m *msf) stream(i int) ([]byte, error) {
	if i < 0 || i >= len(m.streams) || m.streams[i] == nil {
		return nil, nil
	}
	return m.read(m.streams[i], m.sizes[i])
}
