package gecko

import (
	"cmp"
	"slices"
	"strconv"
	"unsafe"

	"github.com/gprof-dev/gprof/format/internal/intern"
	"github.com/gprof-dev/gprof/format/internal/jsonw"
	"github.com/gprof-dev/gprof/profile"
)

// Stored symbols.
//
// When a profile carries a SymbolTable, Write stores it under the top-level
// key "gprofSymbols", which the Firefox Profiler ignores:
//
//	"gprofSymbols": {
//	  "version": 1,
//	  "libs": [{
//	    "debugName": "libc.so.6",
//	    "breakpadId": "0C3B4A1F…0",
//	    "strings": ["", "malloc", "malloc.c", …],
//	    "funcs": [[name, funcAddr, funcSize], …],
//	    "addrs": [[addrDelta, func, file, line, func, file, line, …], …]
//	  }, …]
//	}
//
// Libs are ordered by debugName, then breakpadId. Within a lib:
//
//   - strings holds function and file names; index 0 is always "", which
//     stands for an unknown file.
//   - funcs holds each distinct (Function, FuncAddr, FuncSize) once, the
//     name as an index into strings. Many sampled addresses fall in one
//     function, so rows refer to functions rather than repeat them.
//   - addrs has one row per lib-relative address, in increasing address
//     order. addrDelta is the address minus the previous row's (the first
//     row's is the address itself), which keeps the numbers short. Then
//     come three numbers per SymbolFrame, outermost function first as in
//     the model: an index into funcs, an index into strings for File, and
//     Line. A row with no frames records an address known to have none.
//
// All numbers are integers; addresses may exceed 2^53, which JavaScript
// readers would round but Read does not.
const symbolsVersion = 1

func writeSymbols(e *jsonw.Writer, st *profile.SymbolTable) {
	keys := make([]profile.LibKey, 0, len(st.Libs))
	for k, ls := range st.Libs {
		if ls != nil {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b profile.LibKey) int {
		return cmp.Or(cmp.Compare(a.DebugName, b.DebugName), cmp.Compare(a.BreakpadID, b.BreakpadID))
	})
	e.Raw(`{"version":` + strconv.Itoa(symbolsVersion) + `,"libs":[`)
	for i, k := range keys {
		if i > 0 {
			e.Byte(',')
		}
		writeLibSymbols(e, k, st.Libs[k])
	}
	e.Raw("]}")
}

type funcKey struct {
	name       int
	addr, size uint64
}

func writeLibSymbols(e *jsonw.Writer, k profile.LibKey, ls *profile.LibSymbols) {
	addrs := make([]uint64, 0, len(ls.Addresses))
	for a := range ls.Addresses {
		addrs = append(addrs, a)
	}
	slices.Sort(addrs)

	// Number strings and functions in order of first use, so the output
	// depends only on the table's contents.
	var strs intern.Strings
	strs.Index("")
	str := func(s string) int { return int(strs.Index(s)) }
	var funcs []funcKey
	funcIdx := map[funcKey]int{}
	rows := make([]int, 0, 4*len(addrs))
	for _, a := range addrs {
		for _, f := range ls.Addresses[a] {
			fk := funcKey{str(f.Function), f.FuncAddr, f.FuncSize}
			fi, ok := funcIdx[fk]
			if !ok {
				fi = len(funcs)
				funcs = append(funcs, fk)
				funcIdx[fk] = fi
			}
			rows = append(rows, fi, str(f.File), f.Line)
		}
	}

	e.Raw(`{"debugName":`)
	e.JSString(k.DebugName)
	e.Raw(`,"breakpadId":`)
	e.JSString(k.BreakpadID)
	e.Raw(`,"strings":[`)
	for i, s := range strs.List() {
		if i > 0 {
			e.Byte(',')
		}
		e.JSString(s)
	}
	e.Raw(`],"funcs":[`)
	for i, f := range funcs {
		if i > 0 {
			e.Byte(',')
		}
		e.Byte('[')
		e.Int(int64(f.name))
		e.Byte(',')
		e.Uint(f.addr)
		e.Byte(',')
		e.Uint(f.size)
		e.Byte(']')
	}
	e.Raw(`],"addrs":[`)
	var prev uint64
	for i, a := range addrs {
		if i > 0 {
			e.Byte(',')
		}
		e.Byte('[')
		e.Uint(a - prev)
		prev = a
		for range ls.Addresses[a] {
			e.Byte(',')
			e.Int(int64(rows[0]))
			e.Byte(',')
			e.Int(int64(rows[1]))
			e.Byte(',')
			e.Int(int64(rows[2]))
			rows = rows[3:]
		}
		e.Byte(']')
	}
	e.Raw("]}")
}

func readSymbols(s *scanner) *profile.SymbolTable {
	st := &profile.SymbolTable{Libs: map[profile.LibKey]*profile.LibSymbols{}}
	if !s.beginObject("gprofSymbols") {
		return nil
	}
	for i := 0; s.field(i); i++ {
		switch string(s.key) {
		case "version":
			if v := s.number().int(); v > symbolsVersion {
				s.fail("unsupported gprofSymbols version %d (newest supported is %d)", v, symbolsVersion)
			}
		case "libs":
			if s.beginArray("gprofSymbols.libs") {
				for j := 0; s.elem(j); j++ {
					s.hold(256)
					k, ls := readLibSymbols(s)
					st.Libs[k] = ls
				}
			}
		default:
			s.skip()
		}
	}
	return st
}

func readLibSymbols(s *scanner) (profile.LibKey, *profile.LibSymbols) {
	var (
		k     profile.LibKey
		strs  []string
		funcs []funcKey
		// Rows are kept flat until strings and funcs are both known,
		// whatever order the keys came in.
		rowLen []int
		cells  []uint64
		at     = s.offset()
	)
	if s.beginObject("a gprofSymbols lib") {
		for i := 0; s.field(i); i++ {
			switch string(s.key) {
			case "debugName":
				k.DebugName = s.keptString()
			case "breakpadId":
				k.BreakpadID = s.keptString()
			case "strings":
				if s.beginArray("gprofSymbols strings") {
					for j := 0; s.elem(j); j++ {
						strs = append(strs, s.keptString())
					}
				}
			case "funcs":
				if s.beginArray("gprofSymbols funcs") {
					for j := 0; s.elem(j); j++ {
						s.hold(int(unsafe.Sizeof(funcKey{})))
						var f [3]uint64
						n := s.uints(f[:0])
						if len(n) != 3 {
							s.fail("gprofSymbols func has %d fields, not 3", len(n))
						}
						funcs = append(funcs, funcKey{int(min(n[0], 1<<31)), n[1], n[2]})
					}
				}
			case "addrs":
				if s.beginArray("gprofSymbols addrs") {
					for j := 0; s.elem(j); j++ {
						before := len(cells)
						cells = s.uints(cells)
						n := len(cells) - before
						// The row length, and the map entry and frames the row becomes.
						s.hold(8 + 48 + n/3*int(unsafe.Sizeof(profile.SymbolFrame{})))
						if n%3 != 1 {
							s.fail("gprofSymbols address row has %d fields", n)
						}
						rowLen = append(rowLen, n)
					}
				}
			default:
				s.skip()
			}
		}
	}
	ls := &profile.LibSymbols{Addresses: make(map[uint64][]profile.SymbolFrame, len(rowLen))}
	var addr uint64
	for _, n := range rowLen {
		row := cells[:n]
		cells = cells[n:]
		addr += row[0]
		var frames []profile.SymbolFrame
		for j := 1; j < n; j += 3 {
			fi, file, line := row[j], row[j+1], row[j+2]
			if fi >= uint64(len(funcs)) || file >= uint64(len(strs)) || funcs[fi].name >= len(strs) {
				s.failOff(at, "gprofSymbols lib %s has an index out of range", k.DebugName)
			}
			f := funcs[fi]
			frames = append(frames, profile.SymbolFrame{
				Function: strs[f.name],
				FuncAddr: f.addr,
				FuncSize: f.size,
				File:     strs[file],
				Line:     int(min(line, 1<<31-1)),
			})
		}
		ls.Addresses[addr] = frames
	}
	return k, ls
}

// uints reads an array of unsigned integers, appending them to dst.
func (s *scanner) uints(dst []uint64) []uint64 {
	if !s.beginArray("a list of integers") {
		return dst
	}
	for i := 0; s.elem(i); i++ {
		at := s.offset()
		v, ok := s.number().uint()
		if !ok {
			s.failOff(at, "expected an unsigned integer")
		}
		s.hold(8)
		dst = append(dst, v)
	}
	return dst
}
