package python

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/gprof-dev/gprof/objfile"
)

// pyBinary is what one python binary or libpython file says of itself:
// symbol addresses are link-time (SVMAs).
type pyBinary struct {
	ok       bool
	minor    int // 0 when the name does not tell
	runtime  uint64
	codeType uint64
	version  uint64 // &Py_Version (3.11+), 0 if absent
	eval     []Range
	loads    []objfile.Segment
}

// mapping is one line of /proc/PID/maps.
type mapping struct {
	start, end, off uint64
	dev, inode      string
	path            string
}

// versionInName finds "python3.N" in a file name: python3.12,
// libpython3.12.so.1.0, libpython3.7m.so.
var versionInName = regexp.MustCompile(`python3\.(\d+)`)

// MayHold reports whether a file mapped in a process may hold a CPython
// interpreter: it is one of those find looks in (a python binary or
// libpython, by the name of the file). A backend that sees a process's
// mappings as they are made can so leave alone a process that maps none
// (Reader.Find reads its /proc files until it finds one).
func MayHold(path string) bool {
	return strings.HasPrefix(path, "/") && strings.Contains(filepath.Base(path), "python")
}

// find looks for a CPython interpreter in pid's address space.
func (r *Reader) find(pid int, mem Memory) *interpreter {
	maps, err := readMaps(pid)
	if err != nil {
		return nil
	}
	seen := map[string]bool{}
	for _, m := range maps {
		if !MayHold(m.path) || seen[m.path] {
			continue
		}
		seen[m.path] = true
		bin := r.binary(pid, m)
		if bin == nil || !bin.ok {
			continue
		}
		bias, ok := loadBias(maps, m.path, bin.loads)
		if !ok {
			continue
		}
		if in := bin.interpreter(bias, mem); in != nil {
			return in
		}
	}
	return nil
}

// binary returns what the file mapped at m says, parsed once per file.
func (r *Reader) binary(pid int, m mapping) *pyBinary {
	key := m.path + "\x00" + m.dev + "\x00" + m.inode
	r.mu.Lock()
	b, ok := r.bins[key]
	r.mu.Unlock()
	if ok {
		return b
	}
	b = &pyBinary{}
	// The file as the process mapped it, should the path have changed.
	path := fmt.Sprintf("/proc/%d/map_files/%x-%x", pid, m.start, m.end)
	f, err := objfile.Open(path)
	if err != nil {
		f, err = objfile.Open(m.path)
	}
	if err == nil {
		b.parse(f, m.path)
		f.Close()
	}
	r.mu.Lock()
	r.bins[key] = b
	r.mu.Unlock()
	return b
}

func (b *pyBinary) parse(f *objfile.File, path string) {
	if f.Format() != objfile.ELF || !f.Is64() || !f.LittleEndian() {
		return
	}
	var rt, ct, ver uint64
	// Only the names wanted: this runs while the first samples of the
	// process wait to be decoded.
	funcs, data := f.NamedSymbols(func(name []byte) bool {
		switch string(name) {
		case "_PyRuntime", "PyCode_Type", "Py_Version":
			return true
		}
		return bytes.HasPrefix(name, []byte("_PyEval_EvalFrameDefault"))
	})
	for _, s := range data {
		switch s.Name {
		case "_PyRuntime":
			rt = s.Addr
		case "PyCode_Type":
			ct = s.Addr
		case "Py_Version":
			ver = s.Addr
		}
	}
	if rt == 0 || ct == 0 {
		return
	}
	for _, s := range funcs {
		// _PyEval_EvalFrameDefault and the parts GCC splits off it
		// (_PyEval_EvalFrameDefault.cold).
		if s.Name == "_PyEval_EvalFrameDefault" || strings.HasPrefix(s.Name, "_PyEval_EvalFrameDefault.") {
			b.eval = append(b.eval, Range{s.Addr, s.Addr + max(s.Size, 1)})
		}
	}
	if len(b.eval) == 0 {
		return
	}
	if m := versionInName.FindStringSubmatch(filepath.Base(path)); m != nil {
		b.minor, _ = strconv.Atoi(m[1])
	}
	b.runtime, b.codeType, b.version = rt, ct, ver
	b.loads = f.Segments() // an ELF file's PT_LOADs
	b.ok = true
}

// interpreter places the binary at bias in a process and reads its
// layout.
func (b *pyBinary) interpreter(bias uint64, mem Memory) *interpreter {
	in := &interpreter{runtime: b.runtime + bias, codeType: b.codeType + bias}
	for _, e := range b.eval {
		in.eval = append(in.eval, Range{e.Start + bias, e.End + bias})
	}
	minor := b.minor
	if b.version != 0 {
		var v [8]byte
		if mem.Read(b.version+bias, v[:4]) == nil {
			hex := uint32(v[0]) | uint32(v[1])<<8 | uint32(v[2])<<16 | uint32(v[3])<<24
			if hex>>24 == 3 {
				minor = int(hex>>16) & 0xff
			}
		}
	}
	if minor >= 13 || minor == 0 {
		d := make([]byte, debugOffsetsSize)
		if mem.Read(in.runtime, d) == nil {
			if l, err := fromDebugOffsets(d); err == nil {
				in.lay = l
			}
		}
	}
	if in.lay == nil {
		in.lay = layouts[minor]
	}
	if in.lay == nil {
		return nil
	}
	in.version = fmt.Sprintf("3.%d", in.lay.minor)
	return in
}

// loadBias is what the process added to the file's addresses: from the
// mapping of path that holds the file's first loadable segment.
func loadBias(maps []mapping, path string, loads []objfile.Segment) (uint64, bool) {
	for _, m := range maps {
		if m.path != path {
			continue
		}
		for _, s := range loads {
			if m.off >= s.Offset && m.off < s.Offset+max(s.FileSize, 1) {
				return m.start - (s.Addr + (m.off - s.Offset)), true
			}
		}
	}
	return 0, false
}

// readMaps reads /proc/PID/maps.
func readMaps(pid int) ([]mapping, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		return nil, err
	}
	var out []mapping
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		// start-end perms offset dev inode path
		f := strings.Fields(sc.Text())
		if len(f) < 6 {
			continue
		}
		se := strings.SplitN(f[0], "-", 2)
		if len(se) != 2 {
			continue
		}
		s, err1 := strconv.ParseUint(se[0], 16, 64)
		e, err2 := strconv.ParseUint(se[1], 16, 64)
		off, err3 := strconv.ParseUint(f[2], 16, 64)
		if err1 != nil || err2 != nil || err3 != nil {
			continue
		}
		out = append(out, mapping{start: s, end: e, off: off, dev: f[3], inode: f[4], path: strings.Join(f[5:], " ")})
	}
	return out, nil
}
