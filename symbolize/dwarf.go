package symbolize

import (
	"debug/dwarf"
	"sort"
	"sync"
)

// dwarfIndex answers address queries from DWARF without seeking through
// .debug_info per query: each compilation unit is read once into sorted
// tables of function ranges (nested by inlining) and line rows.
type dwarfIndex struct {
	d     *dwarf.Data
	cus   []span // unit ranges sorted by lo; node indexes units
	units []*unit

	mu       sync.Mutex              // guards unit parsing and refNames
	refNames map[dwarf.Offset]string // names of DIEs referenced across units
}

// span is an address range [lo, hi) owned by a node.
type span struct {
	lo, hi uint64
	node   int32
}

type unit struct {
	entry  *dwarf.Entry
	parsed bool
	top    []span  // out-of-line functions' ranges, sorted by lo
	nodes  []fnode // functions and inlined calls
	lines  []lineRow
	files  []string
	seqs   [][2]uint64 // line sequences, for units without range attributes
}

// fnode is one function body: an out-of-line subprogram or one inlined
// call of a function.
type fnode struct {
	name     string
	callFile int32 // for inlined calls: where, in the caller, the call is
	callLine int32
	children []span // inlined calls within this body, sorted by lo
}

// lineRow maps addresses from addr up to the next row to file:line. A row
// with file == endSeq ends a sequence: its addresses have no line.
type lineRow struct {
	addr uint64
	file uint32
	line uint32
}

const endSeq = ^uint32(0)

// descend reports whether DIEs with tag may contain function bodies or
// inlined calls.
func descend(tag dwarf.Tag) bool {
	switch tag {
	case dwarf.TagSubprogram, dwarf.TagInlinedSubroutine, dwarf.TagLexDwarfBlock,
		dwarf.TagNamespace, dwarf.TagModule, dwarf.TagTryDwarfBlock, dwarf.TagCatchDwarfBlock:
		return true
	}
	return false
}

func searchSpans(spans []span, pc uint64) int32 {
	// sort.Search's closure costs a third of a lookup; search by hand.
	lo, hi := 0, len(spans)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if spans[m].lo <= pc {
			lo = m + 1
		} else {
			hi = m
		}
	}
	i := lo - 1
	// Sibling ranges do not overlap in well-formed DWARF, but a parent's
	// range list can interleave with its neighbours', so look back a little.
	for j := i; j >= 0 && j > i-4; j-- {
		if pc < spans[j].hi {
			return spans[j].node
		}
	}
	return -1
}

func (dx *dwarfIndex) lookup(pc uint64) []Frame {
	ui := searchSpans(dx.cus, pc)
	if ui < 0 {
		return nil
	}
	u := dx.units[ui]
	dx.mu.Lock()
	if !u.parsed {
		dx.parse(u)
	}
	dx.mu.Unlock()

	var chain []*fnode
	for spans := u.top; ; {
		n := searchSpans(spans, pc)
		if n < 0 {
			break
		}
		chain = append(chain, &u.nodes[n])
		spans = u.nodes[n].children
	}
	file, line := u.lineAt(pc)
	if len(chain) == 0 {
		if line == 0 && file == "" {
			return nil
		}
		return []Frame{{File: file, Line: line}}
	}
	frames := make([]Frame, len(chain))
	for i, n := range chain {
		frames[i].Function = n.name
		if i+1 < len(chain) {
			frames[i].File = u.file(chain[i+1].callFile)
			frames[i].Line = int(chain[i+1].callLine)
		} else {
			frames[i].File, frames[i].Line = file, line
		}
	}
	return frames
}

func (u *unit) file(i int32) string {
	if i < 0 || int(i) >= len(u.files) {
		return ""
	}
	return u.files[i]
}

func (u *unit) lineAt(pc uint64) (string, int) {
	lo, hi := 0, len(u.lines)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if u.lines[m].addr <= pc {
			lo = m + 1
		} else {
			hi = m
		}
	}
	i := lo - 1
	if i < 0 || u.lines[i].file == endSeq {
		return "", 0
	}
	r := u.lines[i]
	return u.file(int32(r.file)), int(r.line)
}

// parse reads a unit's line table and function tree. Called with dx.mu
// held.
func (dx *dwarfIndex) parse(u *unit) {
	u.parsed = true
	dx.parseLines(u)

	type info struct {
		name, linkage string
		ref           dwarf.Offset // DW_AT_specification or DW_AT_abstract_origin
	}
	infos := make(map[dwarf.Offset]info)
	type pending struct {
		node int32
		ref  dwarf.Offset
	}
	var unresolved []pending

	r := dx.d.Reader()
	r.Seek(u.entry.Offset)
	if _, err := r.Next(); err != nil {
		return
	}
	// stack[i] is the node enclosing the DIEs at depth i+1, or -1.
	stack := []int32{-1}
	for len(stack) > 0 {
		e, err := r.Next()
		if err != nil || e == nil {
			break
		}
		if e.Tag == 0 {
			stack = stack[:len(stack)-1]
			continue
		}
		parent := stack[len(stack)-1]
		cur := parent
		switch e.Tag {
		case dwarf.TagSubprogram, dwarf.TagInlinedSubroutine:
			in := info{}
			in.name, _ = e.Val(dwarf.AttrName).(string)
			in.linkage, _ = e.Val(dwarf.AttrLinkageName).(string)
			if in.linkage == "" {
				in.linkage, _ = e.Val(attrMIPSLinkageName).(string)
			}
			if ref, ok := e.Val(dwarf.AttrAbstractOrigin).(dwarf.Offset); ok {
				in.ref = ref
			} else if ref, ok := e.Val(dwarf.AttrSpecification).(dwarf.Offset); ok {
				in.ref = ref
			}
			infos[e.Offset] = in
			ranges, _ := dx.d.Ranges(e)
			if len(ranges) == 0 {
				break
			}
			n := fnode{callFile: -1}
			if e.Tag == dwarf.TagInlinedSubroutine {
				if f, ok := e.Val(dwarf.AttrCallFile).(int64); ok {
					n.callFile = int32(f)
				}
				if l, ok := e.Val(dwarf.AttrCallLine).(int64); ok {
					n.callLine = int32(l)
				}
			}
			cur = int32(len(u.nodes))
			u.nodes = append(u.nodes, n)
			unresolved = append(unresolved, pending{cur, e.Offset})
			for _, rg := range ranges {
				if rg[0] >= rg[1] {
					continue
				}
				s := span{lo: rg[0], hi: rg[1], node: cur}
				// An inlined call directly inside a function nested in no
				// other body (a lexical block, say) still belongs to the
				// nearest enclosing body.
				if parent < 0 || e.Tag == dwarf.TagSubprogram {
					u.top = append(u.top, s)
				} else {
					u.nodes[parent].children = append(u.nodes[parent].children, s)
				}
			}
		}
		if e.Children {
			if descend(e.Tag) {
				stack = append(stack, cur)
			} else {
				// Types, variables and call sites hold no code ranges;
				// skipping them (by DW_AT_sibling when present) roughly
				// halves the cost of reading a unit.
				r.SkipChildren()
			}
		}
	}

	// Names live on the abstract instance or declaration a body points to,
	// possibly several hops away; linkage names win as they demangle to
	// qualified names.
	var resolve func(off dwarf.Offset, depth int) (string, string)
	resolve = func(off dwarf.Offset, depth int) (string, string) {
		in, ok := infos[off]
		if !ok {
			name := dx.refName(off)
			return name, ""
		}
		if in.linkage != "" || depth > 8 || in.ref == 0 {
			return in.name, in.linkage
		}
		name, linkage := resolve(in.ref, depth+1)
		if in.name != "" && linkage == "" {
			name = in.name
		}
		return name, linkage
	}
	for _, p := range unresolved {
		name, linkage := resolve(p.ref, 0)
		if linkage != "" {
			name = linkage
		}
		u.nodes[p.node].name = name
	}
	sortSpans := func(s []span) {
		sort.Slice(s, func(i, j int) bool { return s[i].lo < s[j].lo })
	}
	sortSpans(u.top)
	for i := range u.nodes {
		sortSpans(u.nodes[i].children)
	}
}

// refName resolves a reference into another unit, as LTO produces, by
// reading the referenced DIE (and what it refers to). Called with dx.mu
// held.
func (dx *dwarfIndex) refName(off dwarf.Offset) string {
	if name, ok := dx.refNames[off]; ok {
		return name
	}
	name := ""
	start := off
	r := dx.d.Reader()
	for range 8 {
		r.Seek(off)
		e, err := r.Next()
		if err != nil || e == nil {
			break
		}
		if l, ok := e.Val(dwarf.AttrLinkageName).(string); ok {
			name = l
			break
		}
		if n, ok := e.Val(dwarf.AttrName).(string); ok && name == "" {
			name = n
		}
		next, ok := e.Val(dwarf.AttrAbstractOrigin).(dwarf.Offset)
		if !ok {
			next, ok = e.Val(dwarf.AttrSpecification).(dwarf.Offset)
		}
		if !ok {
			break
		}
		off = next
	}
	// Cache under the offset asked for: off has followed the chain, and
	// the name found may come from a DIE before its end.
	dx.refNames[start] = name
	return name
}

func (dx *dwarfIndex) parseLines(u *unit) {
	lr, err := dx.d.LineReader(u.entry)
	if err != nil || lr == nil {
		return
	}
	// Rows first get provisional file ids, as DWARF 4's DW_LNE_define_file
	// can grow the file list while the program runs.
	prov := make(map[*dwarf.LineFile]uint32)
	var ptrs []*dwarf.LineFile
	var le dwarf.LineEntry
	var seqStart uint64
	inSeq := false
	// A read error keeps the rows read so far: a damaged tail should not
	// cost the whole unit.
	for lr.Next(&le) == nil {
		if le.EndSequence {
			u.lines = append(u.lines, lineRow{addr: le.Address, file: endSeq})
			if inSeq {
				u.seqs = append(u.seqs, [2]uint64{seqStart, le.Address})
			}
			inSeq = false
			continue
		}
		if !inSeq {
			seqStart, inSeq = le.Address, true
		}
		id, ok := prov[le.File]
		if !ok {
			id = uint32(len(ptrs))
			prov[le.File] = id
			ptrs = append(ptrs, le.File)
		}
		u.lines = append(u.lines, lineRow{addr: le.Address, file: id, line: uint32(le.Line)})
	}
	// Final ids are positions in the file list, which DW_AT_call_file
	// indexes too.
	files := lr.Files()
	u.files = make([]string, len(files), len(files)+1)
	pos := make(map[*dwarf.LineFile]uint32, len(files))
	for i, f := range files {
		if f != nil {
			u.files[i] = f.Name
			if _, dup := pos[f]; !dup {
				pos[f] = uint32(i)
			}
		}
	}
	final := make([]uint32, len(ptrs))
	for i, f := range ptrs {
		p, ok := pos[f]
		if !ok {
			p = uint32(len(u.files))
			name := ""
			if f != nil {
				name = f.Name
			}
			u.files = append(u.files, name)
		}
		final[i] = p
	}
	for i := range u.lines {
		if r := &u.lines[i]; r.file != endSeq {
			r.file = final[r.file]
		}
	}
	sort.SliceStable(u.lines, func(i, j int) bool {
		a, b := u.lines[i], u.lines[j]
		return a.addr < b.addr || a.addr == b.addr && a.file == endSeq && b.file != endSeq
	})
}

// attrMIPSLinkageName is the pre-DWARF-4 vendor attribute older GCCs and
// some toolchains still emit for mangled names.
const attrMIPSLinkageName dwarf.Attr = 0x2007
