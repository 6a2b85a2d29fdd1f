package symbolize

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
)

// PerfMap is a JIT's symbol map, /tmp/perf-PID.map, as written by V8,
// the JVM's perf agents, LuaJIT, .NET and others.
type PerfMap struct {
	syms []perfSym // sorted by start
}

type perfSym struct {
	start, size uint64
	seq         int // line number: later lines describe newer code
	name        string
}

// PerfMapSymbol is one entry of a perf map.
type PerfMapSymbol struct {
	Name        string
	Start, Size uint64
}

// PerfMapPath returns where the JIT in process pid writes its perf map.
func PerfMapPath(pid int) string { return fmt.Sprintf("/tmp/perf-%d.map", pid) }

// LoadPerfMap reads the perf map of process pid.
func LoadPerfMap(pid int) (*PerfMap, error) {
	f, err := os.Open(PerfMapPath(pid))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ParsePerfMap(f)
}

// ParsePerfMap reads lines of "START SIZE NAME", START and SIZE in hex
// (with or without 0x), NAME running to the end of the line. Malformed
// lines are skipped, as JITs append while we read.
func ParsePerfMap(r io.Reader) (*PerfMap, error) {
	m := &PerfMap{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for n := 0; sc.Scan(); n++ {
		line := strings.TrimRight(sc.Text(), "\r")
		a, rest, ok1 := strings.Cut(line, " ")
		sz, name, ok2 := strings.Cut(strings.TrimLeft(rest, " "), " ")
		if !ok1 || !ok2 {
			continue
		}
		start, err1 := parseHex(a)
		size, err2 := parseHex(sz)
		if err1 != nil || err2 != nil || size == 0 || start+size < start {
			continue
		}
		m.syms = append(m.syms, perfSym{start: start, size: size, seq: n, name: strings.TrimSpace(name)})
	}
	if err := sc.Err(); err != nil {
		return m, fmt.Errorf("read perf map: %w", err)
	}
	sort.SliceStable(m.syms, func(i, j int) bool { return m.syms[i].start < m.syms[j].start })
	return m, nil
}

func parseHex(s string) (uint64, error) {
	s = strings.TrimPrefix(strings.TrimPrefix(s, "0x"), "0X")
	return strconv.ParseUint(s, 16, 64)
}

// Len returns the number of entries.
func (m *PerfMap) Len() int { return len(m.syms) }

// Lookup returns the entry covering the absolute address addr. When a JIT
// reused memory, several entries cover it and the most recently written
// one wins.
func (m *PerfMap) Lookup(addr uint64) (PerfMapSymbol, bool) {
	if m == nil {
		return PerfMapSymbol{}, false
	}
	i := sort.Search(len(m.syms), func(i int) bool { return m.syms[i].start > addr }) - 1
	best := -1
	for j := i; j >= 0 && j > i-16; j-- {
		s := m.syms[j]
		if addr-s.start < s.size && (best < 0 || s.seq > m.syms[best].seq) {
			best = j
		}
	}
	if best < 0 {
		return PerfMapSymbol{}, false
	}
	s := m.syms[best]
	return PerfMapSymbol{Name: s.name, Start: s.start, Size: s.size}, true
}
