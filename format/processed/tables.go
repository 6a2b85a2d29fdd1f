package processed

// Building the processed format's tables from the model: libraries,
// frames, functions, native symbols and stacks, interned once and shared
// by every thread (the processed format's "shared" tables).

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/gprof-dev/gprof/format/internal/intern"
	"github.com/gprof-dev/gprof/format/internal/lifecycle"
	"github.com/gprof-dev/gprof/profile"
)

type outLib struct {
	lib    profile.Lib
	kernel bool
}

type frameKey struct {
	lib    int32 // output lib; -1 no lib; -2 label
	addr   uint64
	caller bool
	cat    int32
	label  string
	// file and lines of a script's frame (profile.Frame.File)
	file           string
	line, funcLine int32
}

// chain is a run of consecutive output frames: an address's outer function
// followed by its inlined callees.
type chain struct{ start, n int32 }

type funcKey struct {
	name, file, resource int32
}

type symKey struct {
	lib  int32
	addr uint64
	name int32
}

type threadOut struct {
	pr   *profile.Process
	th   *profile.Thread
	leaf []int32 // model stack → output stack used by samples; -1 if unused
	// markers are the lifecycle markers followed by the thread's own.
	markers []profile.Marker
}

type builder struct {
	p    *profile.Profile
	cats []profile.CategoryInfo
	// catShift is 1 when a grey default category had to be prepended.
	catShift int32

	strs     intern.Strings
	libs     []outLib
	libIdx   map[profile.LibKey]int32
	kernKey  profile.LibKey
	kernOK   bool
	kernBase uint64
	kernLib  int32

	// frame table
	fAddr  []int64
	fDepth []uint8
	fCat   []int32
	fFunc  []int32
	fSym   []int32
	fLine  []int32
	fLib   []int32
	fIndex map[frameKey]chain

	// func table
	fnName   []int32
	fnRes    []int32
	fnSource []int32
	fnJS     []bool  // a script's function (has a file and a line)
	fnLine   []int32 // where a script's function starts; 0 if unknown
	fnIndex  map[funcKey]int32
	// funcFiles caches profile.SymbolTable.FuncFiles per lib.
	funcFiles map[profile.LibKey]map[string]string

	srcFile  []int32
	srcIndex map[int32]int32

	symLib   []int32
	symAddr  []uint64
	symName  []int32
	symSize  []uint64
	symIndex map[symKey]int32

	// stacks is the output stack table, interned as the model's are.
	stacks profile.StackTable

	threads []threadOut
	schemas []markerSchema
	// ids names processes and threads as in the Gecko output (see
	// profile.TrackIDs).
	ids *profile.TrackIDs
}

func build(p *profile.Profile) (*builder, error) {
	b := &builder{
		p:         p,
		libIdx:    make(map[profile.LibKey]int32),
		kernLib:   -1,
		fIndex:    make(map[frameKey]chain),
		fnIndex:   make(map[funcKey]int32),
		funcFiles: make(map[profile.LibKey]map[string]string),
		srcIndex:  make(map[int32]int32),
		symIndex:  make(map[symKey]int32),
	}
	b.setCategories()
	b.kernKey, b.kernOK = p.Symbols.KernelLib()
	if err := b.kernelBase(); err != nil {
		return nil, err
	}
	// The front-end groups threads into process tracks by pid string;
	// the ids keep exec images together and reused pids apart, the same
	// way as the Gecko writer.
	b.ids = profile.NewTrackIDs(p)
	for _, pr := range p.Processes {
		if pr == nil {
			continue
		}
		libs, err := sortedLibs(pr)
		if err != nil {
			return nil, err
		}
		for _, th := range pr.Threads {
			if th == nil {
				continue
			}
			t, err := b.thread(pr, libs, th)
			if err != nil {
				return nil, fmt.Errorf("pid %d tid %d: %w", pr.Pid, th.Tid, err)
			}
			t.markers = append(lifecycle.Markers(b.ids, pr, th), th.Markers...)
			b.threads = append(b.threads, t)
		}
	}
	b.schemas = b.collectSchemas()
	return b, nil
}

func (b *builder) setCategories() {
	cats := b.p.Meta.Categories
	if len(cats) == 0 {
		cats = profile.DefaultCategories
	}
	if cats[0].Color != "grey" {
		// The front-end takes the first grey category as the default for
		// frames without one; it must exist, and keeping it first means
		// index 0 always works as a fallback.
		cats = append([]profile.CategoryInfo{{Name: "Other", Color: "grey"}}, cats...)
		b.catShift = 1
	}
	b.cats = cats
}

func (b *builder) category(c profile.Category) int32 {
	i := int32(c) + b.catShift
	if i >= int32(len(b.cats)) {
		return 0
	}
	return i
}

func (b *builder) str(s string) int32 { return b.strs.Index(s) }

// kernelBase chooses the synthetic kernel lib's base: one page below the
// lowest unmapped kernel frame or symbol start, so that relative addresses,
// nudged ones included, are small and non-negative.
func (b *builder) kernelBase() error {
	if !b.kernOK {
		return nil
	}
	lo := uint64(math.MaxUint64)
	for _, pr := range b.p.Processes {
		if pr == nil {
			continue
		}
		libs, err := sortedLibs(pr)
		if err != nil {
			return err
		}
		for _, th := range pr.Threads {
			if th == nil {
				continue
			}
			for _, f := range th.Frames.Frames {
				if !b.isKernel(libs, f) {
					continue
				}
				lo = min(lo, f.Address)
				for _, a := range []uint64{f.Address, f.Address - 1} {
					for _, s := range b.p.Symbols.Lookup(b.kernKey, a) {
						if plausibleFuncAddr(s.FuncAddr, a) {
							lo = min(lo, s.FuncAddr)
						}
					}
				}
			}
		}
	}
	if lo != math.MaxUint64 && lo > 0 {
		b.kernBase = (lo - 1) &^ 0xfff
	}
	return nil
}

// plausibleFuncAddr reports whether fa can be the start of the function
// containing a, which rules out unknown (0) and lib-relative start addresses.
func plausibleFuncAddr(fa, a uint64) bool {
	return fa != 0 && fa <= a && a-fa < 1<<32
}

func (b *builder) isKernel(libs []profile.Lib, f profile.Frame) bool {
	return b.kernOK && f.Label == "" && f.Category == profile.CategoryKernel && profile.FindLib(libs, f.Address) == nil
}

// sortedLibs returns a copy of pr's libs ordered by start, checking the
// model's promise that they do not overlap.
func sortedLibs(pr *profile.Process) ([]profile.Lib, error) {
	libs := slices.Clone(pr.Libs)
	slices.SortStableFunc(libs, func(a, b profile.Lib) int { return cmp.Compare(a.Start, b.Start) })
	for i := 1; i < len(libs); i++ {
		if libs[i].Start < libs[i-1].End {
			return nil, fmt.Errorf("pid %d: libs %q and %q overlap", pr.Pid, libs[i-1].Name, libs[i].Name)
		}
	}
	return libs, nil
}

// outLibKey identifies a lib in the output. Libs without identity are told
// apart by path so that unrelated anonymous mappings do not merge.
func outLibKey(l *profile.Lib) profile.LibKey {
	k := l.Key()
	if k.DebugName == "" && k.BreakpadID == "" {
		k.DebugName = "\x00" + l.Path + "\x00" + l.Name
	}
	return k
}

func (b *builder) lib(l *profile.Lib) int32 {
	k := outLibKey(l)
	if i, ok := b.libIdx[k]; ok {
		return i
	}
	i := int32(len(b.libs))
	b.libs = append(b.libs, outLib{lib: *l})
	b.libIdx[k] = i
	return i
}

func (b *builder) kernelLib() int32 {
	if b.kernLib < 0 {
		b.kernLib = int32(len(b.libs))
		b.libs = append(b.libs, outLib{kernel: true, lib: profile.Lib{
			Name: "kernel", Path: "kernel", DebugName: b.kernKey.DebugName,
			BreakpadID: b.kernKey.BreakpadID, Arch: b.p.Meta.Arch,
		}})
	}
	return b.kernLib
}

func hexName(a uint64) string { return "0x" + strconv.FormatUint(a, 16) }

// frame returns the output frames for model frame f in the given role.
func (b *builder) frame(libs []profile.Lib, f profile.Frame, caller bool) chain {
	cat := b.category(f.Category)
	if f.Label != "" {
		k := frameKey{lib: -2, label: f.Label, cat: cat, file: f.File, line: f.Line, funcLine: f.FuncLine}
		if c, ok := b.fIndex[k]; ok {
			return c
		}
		fn := b.fn(b.str(f.Label), -1, b.source(f.File))
		if f.File != "" {
			// A script's function (Python): the front-end's JS
			// functions are the ones with a file and a line.
			b.fnJS[fn] = true
			b.fnLine[fn] = f.FuncLine
		}
		c := chain{b.addFrame(-1, 0, cat, fn, -1, f.Line, -1), 1}
		b.fIndex[k] = c
		return c
	}
	var (
		li   int32 = -1
		rel  uint64
		syms []profile.SymbolFrame
	)
	if l := profile.FindLib(libs, f.Address); l != nil {
		li = b.lib(l)
		rel = l.Rel(f.Address)
		k := frameKey{lib: li, addr: rel, caller: caller, cat: cat}
		if c, ok := b.fIndex[k]; ok {
			return c
		}
		syms = b.p.Symbols.LookupFrame(l.Key(), rel, caller)
		c := b.native(li, rel, caller, cat, f.Address, syms, 0)
		b.fIndex[k] = c
		return c
	}
	if b.isKernel(libs, f) {
		li = b.kernelLib()
		rel = f.Address - b.kernBase
		k := frameKey{lib: li, addr: rel, caller: caller, cat: cat}
		if c, ok := b.fIndex[k]; ok {
			return c
		}
		syms = b.p.Symbols.LookupFrame(b.kernKey, f.Address, caller)
		c := b.native(li, rel, caller, cat, f.Address, syms, b.kernBase)
		b.fIndex[k] = c
		return c
	}
	// An address in no known lib cannot be made lib-relative, so like the
	// front-end it keeps no address and is named by its hex value; the role
	// does not matter for such a frame.
	k := frameKey{lib: -1, addr: f.Address, cat: cat}
	if c, ok := b.fIndex[k]; ok {
		return c
	}
	fn := b.fn(b.str(hexName(f.Address)), -1, -1)
	c := chain{b.addFrame(-1, 0, cat, fn, -1, 0, -1), 1}
	b.fIndex[k] = c
	return c
}

// native adds the frames of a lib address. base converts symbol function
// starts to lib-relative ones (non-zero only for the kernel, whose symbols
// use absolute addresses).
func (b *builder) native(li int32, rel uint64, caller bool, cat int32, abs uint64, syms []profile.SymbolFrame, base uint64) chain {
	addr := int64(rel)
	if caller && addr > 0 {
		addr--
	}
	if len(syms) == 0 {
		// Named as gprof report names it, by the library and the
		// library-relative address ("sort+0x52a7"), which is the same in
		// every run and every process, where the absolute address is not.
		// The kernel's synthetic lib has no such meaning: its frames keep
		// their absolute address.
		name := hexName(abs)
		if !b.libs[li].kernel {
			name = b.libs[li].lib.Name + "+" + hexName(rel)
		}
		fn := b.fn(b.str(name), li, -1)
		return chain{b.addFrame(addr, 0, cat, fn, -1, 0, li), 1}
	}
	outer := syms[0]
	symAddr := uint64(addr)
	if base != 0 {
		if plausibleFuncAddr(outer.FuncAddr, abs) && outer.FuncAddr >= base {
			symAddr = outer.FuncAddr - base
		}
	} else if outer.FuncAddr != 0 || outer.FuncSize != 0 {
		symAddr = outer.FuncAddr
	}
	name := b.str(outer.Function)
	sk := symKey{lib: li, addr: symAddr, name: name}
	if outer.FuncAddr == 0 && outer.FuncSize == 0 {
		// Without a known start, group by name so one function still gets
		// one native symbol.
		sk.addr = math.MaxUint64
	}
	sym, ok := b.symIndex[sk]
	if !ok {
		sym = int32(len(b.symLib))
		b.symLib = append(b.symLib, li)
		b.symAddr = append(b.symAddr, symAddr)
		b.symName = append(b.symName, name)
		b.symSize = append(b.symSize, outer.FuncSize)
		b.symIndex[sk] = sym
	}
	c := chain{start: int32(len(b.fAddr))}
	for d, s := range syms {
		fn := b.fn(b.str(s.Function), li, b.source(b.funcFile(li, s.Function, s.File)))
		b.addFrame(addr, uint8(min(d, 255)), cat, fn, sym, int32(s.Line), li)
		c.n++
	}
	return c
}

// funcFile is the file function fn of lib li is shown under: one per
// function, whatever files its lines are in (profile.SymbolTable.FuncFiles);
// each frame keeps its own line.
func (b *builder) funcFile(li int32, fn, file string) string {
	k := b.libs[li].lib.Key()
	m, ok := b.funcFiles[k]
	if !ok {
		m = b.p.Symbols.FuncFiles(k)
		b.funcFiles[k] = m
	}
	if f := m[fn]; f != "" {
		return f
	}
	return file
}

func (b *builder) source(file string) int32 {
	if file == "" {
		return -1
	}
	s := b.str(file)
	if i, ok := b.srcIndex[s]; ok {
		return i
	}
	i := int32(len(b.srcFile))
	b.srcFile = append(b.srcFile, s)
	b.srcIndex[s] = i
	return i
}

// fn interns a function. One resource exists per lib, with the same index,
// so a lib index doubles as its resource index.
func (b *builder) fn(name, resource, source int32) int32 {
	k := funcKey{name: name, file: source, resource: resource}
	if i, ok := b.fnIndex[k]; ok {
		return i
	}
	i := int32(len(b.fnName))
	b.fnName = append(b.fnName, name)
	b.fnRes = append(b.fnRes, resource)
	b.fnSource = append(b.fnSource, source)
	b.fnJS = append(b.fnJS, false)
	b.fnLine = append(b.fnLine, 0)
	b.fnIndex[k] = i
	return i
}

func (b *builder) addFrame(addr int64, depth uint8, cat, fn, sym, line, lib int32) int32 {
	i := int32(len(b.fAddr))
	b.fAddr = append(b.fAddr, addr)
	b.fDepth = append(b.fDepth, depth)
	b.fCat = append(b.fCat, cat)
	b.fFunc = append(b.fFunc, fn)
	b.fSym = append(b.fSym, sym)
	b.fLine = append(b.fLine, line)
	b.fLib = append(b.fLib, lib)
	return i
}

// thread maps th's stacks into the shared output tables. Each model stack
// can need two output versions: as a sampled leaf (raw address) and as a
// caller of deeper stacks (nudged address).
func (b *builder) thread(pr *profile.Process, libs []profile.Lib, th *profile.Thread) (threadOut, error) {
	st, ft, sm := &th.Stacks, &th.Frames, &th.Samples
	ns, nf := len(st.Frame), len(ft.Frames)
	if len(st.Prefix) != ns {
		return threadOut{}, fmt.Errorf("stack table columns differ in length")
	}
	n := len(sm.Stack)
	if len(sm.Time) != n || (sm.CPUDelta != nil && len(sm.CPUDelta) != n) || (sm.Weight != nil && len(sm.Weight) != n) {
		return threadOut{}, fmt.Errorf("sample table columns differ in length")
	}
	const (
		usedLeaf = 1 << iota
		usedCaller
	)
	use := make([]uint8, ns)
	for i := 0; i < ns; i++ {
		p, f := st.Prefix[i], st.Frame[i]
		if f < 0 || int(f) >= nf {
			return threadOut{}, fmt.Errorf("stack %d: frame %d out of range", i, f)
		}
		if p != profile.NoStack {
			if p < 0 || p >= int32(i) {
				return threadOut{}, fmt.Errorf("stack %d: prefix %d is not an earlier stack", i, p)
			}
			use[p] |= usedCaller
		}
	}
	for i, s := range sm.Stack {
		if s == profile.NoStack {
			continue
		}
		if s < 0 || int(s) >= ns {
			return threadOut{}, fmt.Errorf("sample %d: stack %d out of range", i, s)
		}
		use[s] |= usedLeaf
	}
	leaf := make([]int32, ns)
	caller := make([]int32, ns)
	// Frame chains are cached per model frame and role: [2*f] leaf,
	// [2*f+1] caller.
	chains := make([]chain, 2*nf)
	for i := range chains {
		chains[i].n = -1
	}
	get := func(f int32, asCaller bool) chain {
		k := 2 * int(f)
		if asCaller {
			k++
		}
		if chains[k].n < 0 {
			chains[k] = b.frame(libs, ft.Frames[f], asCaller)
		}
		return chains[k]
	}
	for i := 0; i < ns; i++ {
		leaf[i], caller[i] = -1, -1
		if use[i] == 0 {
			continue
		}
		parent := int32(-1)
		if p := st.Prefix[i]; p != profile.NoStack {
			parent = caller[p]
		}
		for _, role := range []uint8{usedLeaf, usedCaller} {
			if use[i]&role == 0 {
				continue
			}
			c := get(st.Frame[i], role == usedCaller)
			s := parent
			for k := c.start; k < c.start+c.n; k++ {
				s = b.stacks.Intern(s, k)
			}
			if role == usedLeaf {
				leaf[i] = s
			} else {
				caller[i] = s
			}
		}
	}
	return threadOut{pr: pr, th: th, leaf: leaf}, nil
}
