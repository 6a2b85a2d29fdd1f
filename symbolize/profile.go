package symbolize

import (
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"runtime"
	"sort"
	"strings"
	"sync"

	"github.com/gprof-dev/gprof/objfile"
	"github.com/gprof-dev/gprof/profile"
	"github.com/gprof-dev/gprof/symbolize/jitdump"
	"github.com/gprof-dev/gprof/symbolize/remote"
)

// Options configure Profile.
//
// What a caller has read already comes in as data: a recorder opens each
// binary once while its process lives, and reads the JIT maps and
// jitdumps the processes wrote, and hands them over here; Profile reads
// them and never asks the caller for more. What is missing from them it
// finds itself, by path, as for a profile read from a file.
type Options struct {
	// SymbolDirs are searched for separate debug files (see SymbolDirs).
	SymbolDirs []string
	// DebugRoot replaces DefaultDebugRoot when not empty.
	DebugRoot string
	// Binaries are object files the caller opened already, by the key of
	// the libs they are the binaries of. A library found here is read
	// from that file (if it is the build the lib names) rather than
	// opened by path: it may be a file since deleted or replaced on disk.
	// Profile neither closes them nor keeps them.
	Binaries map[profile.LibKey]*objfile.File
	// Kallsyms loads the kernel symbols, once, if the profile has kernel
	// frames; nil means LoadKallsyms.
	Kallsyms func() (*Kallsyms, error)
	// PerfMaps are the JIT perf maps the caller read, by process id; the
	// map of a process not in it is read from /tmp/perf-PID.map.
	PerfMaps map[int]*PerfMap
	// JITDumps are the jitdumps the caller read, by process id; that of a
	// process not in it is read from /tmp/jit-PID.dump. Their names come
	// before the perf map's.
	JITDumps map[int]JITDump
	// Remote fetches what is not on this machine: debug files and
	// executables by build-id (debuginfod), PDBs (symbol servers).
	Remote *remote.Client
}

// JITDump is a process's jitdump as its reader left it: the file's path,
// and what it holds or why it could not be read.
type JITDump struct {
	Path string
	File *jitdump.File // nil when nothing could be read (see Err)
	Err  error
}

// Stats reports what Profile resolved. Counts are of distinct addresses.
type Stats struct {
	Resolved, Unresolved int
	// Regions counts JIT addresses named only by their region (see
	// LibStats.Regions).
	Regions int
	Libs    []LibStats // sorted by DebugName
}

// LibStats is the outcome for one library (or pseudo-library).
type LibStats struct {
	Key       profile.LibKey
	Path      string // the file symbols came from, when one was opened
	DebugFile string // its separate debug file, if any
	// Rejected lists debug files found for it but skipped as another
	// build's, one line each (see Binary.RejectedDebugFiles).
	Rejected   []string
	Resolved   int
	Unresolved int
	// Regions counts the addresses of JIT code that no jitdump or perf
	// map names, named by their region of memory ("[JIT] node").
	Regions int
	Err     error // why nothing could be resolved, if so
}

// RejectedDebugFiles gathers the libraries' Rejected lines, each once, in
// order: what a command tells its user at the end.
func (s Stats) RejectedDebugFiles() []string {
	var out []string
	seen := make(map[string]bool)
	for _, l := range s.Libs {
		for _, r := range l.Rejected {
			if !seen[r] {
				seen[r] = true
				out = append(out, r)
			}
		}
	}
	return out
}

// group is every address of one library across the profile.
type group struct {
	key  profile.LibKey
	kind groupKind
	pid  int
	// cands are the mappings the library was seen at, to find a path that
	// opens.
	cands []candidate
	seen  map[*profile.Lib]bool
	// addrs are the library-relative addresses to look up: each frame's
	// address as profile.LookupAddr gives it for the roles the frame has
	// (inside the call instruction for a caller, as is for a sampled
	// instruction). Results are filed under the address looked up.
	addrs map[uint64]struct{}
	stats LibStats
}

type groupKind uint8

const (
	kindBinary groupKind = iota
	kindKernel
	kindPerfMap
)

type candidate struct {
	proc *profile.Process
	lib  *profile.Lib
}

// Profile symbolizes every native frame of p into p.Symbols, keyed as
// profile.Process.Locate says. Addresses already in p.Symbols are left
// alone, and a library whose addresses are all known is not opened.
//
// A frame is looked up where profile.LookupAddr says for each role it has
// on the thread's stacks, and the result filed under that address: a
// caller (a return address) one byte lower, inside the call instruction,
// so that its line and inline frames are the call's and not those of
// whatever the compiler put after it; a sampled instruction as is. An
// address seen both ways is looked up both ways. Every symbol source goes
// through this, so each gets the rule without knowing of it.
//
// Failures to open or read one library are reported in Stats, not as an
// error; the error is for a profile that cannot be processed at all.
func Profile(p *profile.Profile, opts Options) (Stats, error) {
	if p == nil {
		return Stats{}, errors.New("symbolize: nil profile")
	}
	if p.Symbols == nil {
		p.Symbols = &profile.SymbolTable{}
	}
	groups := collect(p)

	var todo []*group
	for _, g := range groups {
		for rel := range g.addrs {
			if p.Symbols.Lookup(g.key, rel) != nil {
				delete(g.addrs, rel)
			}
		}
		if len(g.addrs) > 0 {
			todo = append(todo, g)
		}
	}
	sort.Slice(todo, func(i, j int) bool { return todo[i].key.DebugName < todo[j].key.DebugName })

	loadKallsyms := opts.Kallsyms
	if loadKallsyms == nil {
		loadKallsyms = LoadKallsyms
	}
	loadKernel := sync.OnceValues(loadKallsyms)

	var mu sync.Mutex // guards p.Symbols
	add := func(g *group, rel uint64, frames []profile.SymbolFrame) {
		mu.Lock()
		p.Symbols.Add(g.key, rel, frames)
		mu.Unlock()
	}
	work := make(chan *group)
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(todo)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for g := range work {
				switch g.kind {
				case kindKernel:
					k, err := loadKernel()
					symbolizeKernel(g, k, err, add)
				case kindPerfMap:
					symbolizePerfMap(g, opts, add)
				default:
					symbolizeBinary(g, opts, add)
				}
			}
		}()
	}
	for _, g := range todo {
		work <- g
	}
	close(work)
	wg.Wait()

	var st Stats
	for _, g := range todo {
		st.Resolved += g.stats.Resolved
		st.Unresolved += g.stats.Unresolved
		st.Regions += g.stats.Regions
		st.Libs = append(st.Libs, g.stats)
	}
	return st, nil
}

// collect groups the profile's native frame addresses by library and
// decides which are return addresses.
func collect(p *profile.Profile) map[profile.LibKey]*group {
	groups := make(map[profile.LibKey]*group)
	for _, proc := range p.Processes {
		for _, th := range proc.Threads {
			roles := frameRoles(th)
			for fi, f := range th.Frames.Frames {
				key, rel, ok := proc.Locate(f)
				if !ok {
					continue
				}
				g := groups[key]
				if g == nil {
					g = &group{key: key, addrs: make(map[uint64]struct{}), pid: proc.Pid, seen: make(map[*profile.Lib]bool)}
					g.stats.Key = key
					switch {
					case f.Category == profile.CategoryKernel && !isPDBName(key.DebugName):
						// Linux's kernel, named from kallsyms; a
						// Windows trace's kernel modules have PDBs.
						g.kind = kindKernel
					case key.DebugName == profile.PerfMapKey(proc.Pid).DebugName:
						// Outside every lib, or in the pseudo-lib a
						// recorder made of anonymous executable memory.
						g.kind = kindPerfMap
					}
					groups[key] = g
				}
				if lib := profile.FindLib(proc.Libs, f.Address); lib != nil {
					if !g.seen[lib] {
						g.seen[lib] = true
						g.cands = append(g.cands, candidate{proc, lib})
					}
				}
				if roles[fi]&roleLeaf != 0 {
					g.addrs[profile.LookupAddr(rel, false)] = struct{}{}
				}
				if roles[fi]&roleCaller != 0 {
					g.addrs[profile.LookupAddr(rel, true)] = struct{}{}
				}
			}
		}
	}
	return groups
}

// Roles a frame can have on a thread's stacks.
const (
	roleLeaf   = 1 << iota // a sampled instruction
	roleCaller             // a return address
)

// frameRoles says, per frame of th, whether it is a sampled instruction
// (the leaf of a sample, the user frame directly under a kernel frame,
// which is where the thread trapped, or a frame no stack uses) and
// whether it is a return address (the prefix of some stack). Consumers
// decide the same way, by position on the stack, and read the table with
// profile.SymbolTable.LookupFrame; the user frame under a kernel frame is
// filed as is, where LookupFrame falls back to for a caller.
func frameRoles(th *profile.Thread) []uint8 {
	roles := make([]uint8, th.Frames.Len())
	frames := th.Frames.Frames
	st := &th.Stacks
	for _, s := range th.Samples.Stack {
		if s >= 0 && int(s) < len(st.Frame) && int(st.Frame[s]) < len(roles) {
			roles[st.Frame[s]] |= roleLeaf
		}
	}
	for s, fi := range st.Frame {
		pre := st.Prefix[s]
		if pre < 0 || int(pre) >= len(st.Frame) {
			continue
		}
		pf := st.Frame[pre]
		if int(pf) >= len(roles) || int(fi) >= len(frames) {
			continue
		}
		if frames[fi].Category == profile.CategoryKernel && frames[pf].Category != profile.CategoryKernel {
			roles[pf] |= roleLeaf
		} else {
			roles[pf] |= roleCaller
		}
	}
	for i, r := range roles {
		if r == 0 {
			roles[i] = roleLeaf
		}
	}
	return roles
}

func symbolizeBinary(g *group, opts Options, add func(*group, uint64, []profile.SymbolFrame)) {
	b, err := openForLib(g, opts)
	if err != nil {
		// Not ELF, or not this build: a Mach-O or PE file may be.
		if o, oerr := openObjectForLib(g, opts); oerr == nil {
			defer o.Close()
			g.stats.Err = nil
			g.stats.DebugFile = o.DebugFile()
			lookupAll(g, o, add)
			return
		}
		// Known by its identity alone (a Windows trace read here): its
		// PDB, from a symbol directory or server.
		if s, perr := openPDBForLib(g, opts); perr == nil {
			defer s.Close()
			g.stats.Err = nil
			g.stats.DebugFile = s.DebugFile()
			lookupAll(g, s, add)
			return
		}
		g.stats.Err = err
		g.stats.Unresolved = len(g.addrs)
		return
	}
	defer b.Close()
	g.stats.Path = b.OpenedPath()
	g.stats.DebugFile = b.DebugFile()
	g.stats.Rejected = b.RejectedDebugFiles()
	lookupAll(g, b, add)
}

func lookupAll(g *group, s Symbolizer, add func(*group, uint64, []profile.SymbolFrame)) {
	for rel := range g.addrs {
		frames := s.Lookup(rel)
		if frames == nil {
			g.stats.Unresolved++
			continue
		}
		g.stats.Resolved++
		add(g, rel, frames)
	}
}

// openObjectForLib opens a Mach-O or PE file the library was recorded
// from (the caller's, from Options.Binaries, else by path), checking its
// identity as openForLib does; the slice of a fat Mach-O file is the one
// whose UUID the breakpad ID names.
func openObjectForLib(g *group, opts Options) (*Object, error) {
	sopts := []Option{SymbolDirs(opts.SymbolDirs...), Remote(opts.Remote)}
	if f := opts.Binaries[g.key]; f != nil && f.Format() != objfile.ELF && len(g.cands) > 0 {
		if objectIsBuild(f.Identity().BreakpadID, g.cands[0].lib.BreakpadID) {
			return &Object{file: f, borrowed: true, cfg: config{debugRoot: DefaultDebugRoot, symbolDirs: opts.SymbolDirs, remote: opts.Remote}}, nil
		}
	}
	for _, c := range g.cands {
		want := c.lib.BreakpadID
		o, err := OpenObject(c.lib.Path, sopts)
		if err != nil {
			continue
		}
		if objectIsBuild(o.File().Identity().BreakpadID, want) {
			return o, nil
		}
		fat := len(o.File().Arches()) > 1
		o.Close()
		if id, ok := uuidOf(want); ok && fat {
			if o, err := OpenObject(c.lib.Path, sopts, objfile.UUID(id)); err == nil {
				if o.File().Identity().BreakpadID == want {
					return o, nil
				}
				o.Close()
			}
		}
	}
	return nil, fmt.Errorf("symbolize: %s: no Mach-O or PE file of that build", g.key.DebugName)
}

// objectIsBuild reports whether a Mach-O or PE file whose breakpad ID is
// have is the build recorded as want. A file without an identity (a PE
// with no CodeView record, as Wine's and MinGW's DLLs are) was recorded
// as all zeros, or none.
func objectIsBuild(have, want string) bool {
	return want == "" || have == want || have == "" && strings.Trim(want, "0") == ""
}

// uuidOf reads the Mach-O UUID a breakpad ID holds (its 32 hex digits
// before the age), for picking the slice of a fat file.
func uuidOf(breakpadID string) ([]byte, bool) {
	if len(breakpadID) < 33 {
		return nil, false
	}
	id, err := hex.DecodeString(breakpadID[:32])
	return id, err == nil
}

// openForLib opens the binary the library was recorded as: the file the
// caller opened (Options.Binaries), else the first path that holds that
// build. The file at a path may since have been replaced (a package
// upgrade, a rebuild), and symbols from another build would be wrong.
func openForLib(g *group, opts Options) (*Binary, error) {
	cfg := config{debugRoot: DefaultDebugRoot, symbolDirs: opts.SymbolDirs, remote: opts.Remote}
	if opts.DebugRoot != "" {
		cfg.debugRoot = opts.DebugRoot
	}
	var errs []error
	// Named by the recorded path, which is what the user knows and where
	// its .gnu_debuglink file would sit.
	if f := opts.Binaries[g.key]; f != nil && f.Format() == objfile.ELF && len(g.cands) > 0 {
		c := g.cands[0]
		b := &Binary{path: c.lib.Path, openPath: f.Path(), obj: f, borrowed: true, cfg: cfg}
		err := isBuild(b.Identity(), f.Path(), c.lib)
		if err == nil {
			return b, nil
		}
		errs = append(errs, err)
	}
	tried := make(map[string]bool)
	for _, c := range g.cands {
		path := c.lib.Path
		if path == "" || tried[path] {
			continue
		}
		tried[path] = true
		b, err := openNamed(c.lib.Path, []string{path}, cfg)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if err := isBuild(b.Identity(), path, c.lib); err != nil {
			errs = append(errs, err)
			b.Close()
			continue
		}
		return b, nil
	}
	// Not here (a recording from another machine): the executable from
	// a debuginfod server, by its build-id.
	for _, c := range g.cands {
		bid, err := hex.DecodeString(c.lib.CodeID)
		if err != nil || len(bid) < 8 || opts.Remote == nil || objfile.BreakpadID(bid, true) != c.lib.BreakpadID {
			continue
		}
		p, err := opts.Remote.Executable(bid, elfOfBuild(bid))
		if err != nil {
			if !errors.Is(err, remote.ErrNotFound) {
				errs = append(errs, err)
			}
			break
		}
		if b, err := openNamed(c.lib.Path, []string{p}, cfg); err == nil {
			return b, nil
		}
	}
	if len(errs) == 0 {
		return nil, fmt.Errorf("symbolize: %s: no file to open", g.key.DebugName)
	}
	return nil, errors.Join(errs...)
}

// isBuild says why the file at path, of identity id, is not the build lib
// was recorded as, or nil if it is.
func isBuild(id objfile.Identity, path string, lib *profile.Lib) error {
	if want := lib.BreakpadID; want != "" && id.BreakpadID != want {
		return fmt.Errorf("%s: is build %s, not the %s that was mapped", path, id.BreakpadID, want)
	}
	return nil
}

func isPDBName(name string) bool { return strings.HasSuffix(strings.ToLower(name), ".pdb") }

// openPDBForLib opens the PDB of a library known only by its identity: a
// debug name ending in .pdb and a breakpad ID (GUID and age), as a
// Windows trace names its modules.
func openPDBForLib(g *group, opts Options) (Symbolizer, error) {
	if OpenPDBByID == nil {
		return nil, errors.New("no PDB reader")
	}
	for _, c := range g.cands {
		id := c.lib.BreakpadID
		if !isPDBName(c.lib.DebugName) || strings.Trim(id, "0") == "" {
			continue
		}
		return OpenPDBByID(c.lib.DebugName, id, opts.SymbolDirs, opts.Remote)
	}
	return nil, errors.New("no PDB identity")
}

// base returns the absolute address a kernel or perf-map group's relative
// addresses count from: that of the pseudo-library a recorder added, or 0
// for frames outside every library, which are keyed by absolute address.
func (g *group) base() uint64 {
	if len(g.cands) == 0 {
		return 0
	}
	return g.cands[0].lib.Start - g.cands[0].lib.Offset
}

func symbolizeKernel(g *group, k *Kallsyms, err error, add func(*group, uint64, []profile.SymbolFrame)) {
	if err != nil {
		g.stats.Err = err
		g.stats.Unresolved = len(g.addrs)
		return
	}
	g.stats.Path = "/proc/kallsyms"
	base := g.base()
	for rel := range g.addrs {
		s, ok := k.Lookup(rel + base)
		if !ok {
			g.stats.Unresolved++
			continue
		}
		name := s.Name
		if s.Module != "" {
			name += " [" + s.Module + "]"
		}
		g.stats.Resolved++
		add(g, rel, []profile.SymbolFrame{{Function: name, FuncAddr: s.Addr - base, FuncSize: s.Size}})
	}
}

func symbolizePerfMap(g *group, opts Options, add func(*group, uint64, []profile.SymbolFrame)) {
	var dump *jitdump.File
	var dumpPath string
	var dumpErr error
	if d, ok := opts.JITDumps[g.pid]; ok {
		dump, dumpPath, dumpErr = d.File, d.Path, d.Err
	} else {
		dump, dumpPath, dumpErr = LoadJITDump(g.pid)
	}
	m, mapErr := opts.PerfMaps[g.pid], error(nil)
	if m == nil {
		m, mapErr = LoadPerfMap(g.pid)
	}
	if dump == nil && m == nil {
		g.stats.Err = mapErr
		if !errors.Is(dumpErr, fs.ErrNotExist) {
			g.stats.Err = dumpErr
		}
	}
	runtime := "anonymous memory"
	if len(g.cands) > 0 {
		runtime = JITRuntime(g.cands[0].proc)
	}
	var paths []string
	if dump != nil {
		paths = append(paths, dumpPath)
	}
	if m != nil {
		paths = append(paths, PerfMapPath(g.pid))
	}
	g.stats.Path = strings.Join(paths, ", ")
	base := g.base()
	// The addresses are those to look up: a caller's is already its call
	// instruction's (see Profile).
	for rel := range g.addrs {
		at := rel + base
		if c, ok := dump.Lookup(at); ok {
			f := profile.SymbolFrame{Function: c.Name, FuncAddr: c.Addr - base, FuncSize: c.Size}
			if l, ok := c.LineAt(at); ok {
				f.File, f.Line = l.File, l.Line
			}
			g.stats.Resolved++
			add(g, rel, []profile.SymbolFrame{f})
			continue
		}
		s, ok := m.Lookup(at)
		if !ok {
			if f, ok := g.region(at, base, runtime); ok {
				g.stats.Regions++
				add(g, rel, []profile.SymbolFrame{f})
				continue
			}
			g.stats.Unresolved++
			continue
		}
		g.stats.Resolved++
		add(g, rel, []profile.SymbolFrame{{Function: s.Name, FuncAddr: s.Start - base, FuncSize: s.Size}})
	}
}

// LoadJITDump reads the jitdump of process pid where CPython writes it,
// /tmp/jit-PID.dump.
func LoadJITDump(pid int) (*jitdump.File, string, error) {
	p := jitdump.DefaultPath(pid)
	f, err := jitdump.Read(p)
	return f, p, err
}
