package record

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gprof-dev/gprof/event"
	"github.com/gprof-dev/gprof/objfile"
	"github.com/gprof-dev/gprof/profile"
	"github.com/gprof-dev/gprof/symbolize"
	"github.com/gprof-dev/gprof/symbolize/remote"
)

// fileKey identifies a mapped file independent of its (possibly reused or
// deleted) path.
type fileKey struct {
	path       string
	dev, inode uint64
}

// libFile is a binary identified while its process lived. The recorder
// opens each binary once, here, and keeps it open and parsed until the
// profile is finished: a binary deleted or replaced during the recording is
// still the one symbolicated, and symbolize reads it from obj rather than
// open it again.
type libFile struct {
	// fd is the file, held open; obj is it parsed, nil when it could not
	// be read. Both are nil for an image read from memory (the vdso).
	fd  *os.File
	obj *objfile.File
	id  objfile.Identity
	// place is what placing a mapping of the file needs.
	place objfile.Placement
	// note explains a degraded identity, e.g. a file replaced on disk.
	note string
	// pages finds the file offset of an executable page by its first
	// bytes, for recognizing copies of it; built on first use.
	pages map[[pageKeyLen]byte]uint64
}

// anonKey is an anonymous executable region of a process.
type anonKey struct {
	pid        int
	start, end uint64
}

// textCopy says which file an anonymous region is a copy of, and from
// which offset. V8 copies node's builtins into anonymous memory when
// node's own text is in anonymous huge pages (--use-largepages), where it
// cannot map them again from the file.
type textCopy struct {
	file   *libFile
	offset uint64
}

// libResolver identifies binaries as they are mapped and turns a
// process's mappings into profile.Libs.
type libResolver struct {
	symbolDirs []string
	files      map[fileKey]*libFile
	byKey      map[profile.LibKey]*libFile
	vdso       *libFile // gprof's own vdso, identical to its targets'
	vdsoDone   bool
	perfMaps   map[int]*symbolize.PerfMap // JIT maps read while recording
	// jitPids are processes with anonymous executable memory, whose JIT
	// maps are re-read while they live: runtimes delete them on exit.
	jitPids  map[int]bool
	perfStat map[int]perfMapStat
	// procFiles are the files each process maps executable, the sources
	// an anonymous copy of code may come from.
	procFiles map[int][]*libFile
	// anonTodo are anonymous executable regions not yet told apart as
	// JIT code or copies of a file's text, with the checks left for a
	// region still empty; copies are those found to be copies.
	anonTodo map[anonKey]int
	copies   map[anonKey]textCopy
	// jitDumps are the jitdump files processes mapped (see jit.go).
	jitDumps map[int]*jitDump
	// remote fetches the debug files this machine lacks, at the end.
	remote *remote.Client
}

// perfMapStat tells whether a JIT map changed since it was read.
type perfMapStat struct {
	size    int64
	modTime int64
}

func newLibResolver(symbolDirs []string) *libResolver {
	return &libResolver{
		symbolDirs: symbolDirs,
		files:      make(map[fileKey]*libFile),
		byKey:      make(map[profile.LibKey]*libFile),
		perfMaps:   make(map[int]*symbolize.PerfMap),
		jitPids:    make(map[int]bool),
		perfStat:   make(map[int]perfMapStat),
		procFiles:  make(map[int][]*libFile),
		anonTodo:   make(map[anonKey]int),
		copies:     make(map[anonKey]textCopy),
		jitDumps:   make(map[int]*jitDump),
	}
}

func (r *libResolver) close() {
	for _, f := range r.files {
		f.close()
	}
	if r.vdso != nil {
		r.vdso.close()
	}
}

func (f *libFile) close() {
	if f.obj != nil {
		f.obj.Close()
	}
	if f.fd != nil {
		f.fd.Close()
	}
}

// identify fills f from obj, the binary called path: the identity, what
// placing mappings needs, and the parsed file itself.
func (f *libFile) identify(obj *objfile.File, path string) {
	f.obj = obj
	f.id = obj.Identity()
	// Named by the path the process mapped it at, what the user knows,
	// not by another path that opened it.
	f.id.DebugName, f.id.DebugPath = filepath.Base(path), path
	f.place = obj.Placement()
}

// openELF opens the ELF file at path, once: the file held open, and
// parsed. Only ELF files are read: a mapping's identity in another format
// comes from its backend (event.Map.Image), and one of another format
// that a Linux process maps (a PE image under Wine) stays unidentified.
func openELF(path string) (*os.File, *objfile.File, error) {
	fd, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	obj, err := objfile.NewFile(fd, path)
	if err == nil && obj.Format() != objfile.ELF {
		err = fmt.Errorf("%s is %s, not ELF", path, obj.Format())
	}
	if err != nil {
		fd.Close()
		return nil, nil, err
	}
	return fd, obj, nil
}

// processExited reads the process's JIT map one last time, in case it
// is still there.
func (r *libResolver) processExited(pid int) {
	r.refreshPerfMap(pid)
	r.refreshJITDump(pid)
	delete(r.jitPids, pid)
	for k := range r.anonTodo {
		if k.pid == pid {
			delete(r.anonTodo, k)
		}
	}
}

// tick re-reads the JIT maps that changed, for processes that have JIT
// code, and looks into anonymous regions not yet identified. It is called
// about four times a second while recording.
func (r *libResolver) tick() {
	for pid := range r.jitPids {
		r.refreshPerfMap(pid)
	}
	for pid := range r.jitDumps {
		r.refreshJITDump(pid)
	}
	for k := range r.anonTodo {
		r.identifyAnon(k)
	}
}

const (
	// pageKeyLen bytes from the start of a page identify it among a
	// file's executable pages.
	pageKeyLen = 64
	// anonChecks bounds how many ticks a region may stay empty.
	anonChecks = 40
	pageSize   = 4096 // the smallest page size: copies start on one
)

// identifyAnon decides whether the anonymous region k holds a copy of
// executable pages of a file its process maps: its first bytes must be
// those of such a page, and its whole first page equal to it. A region
// still empty (mapped, not yet filled) is looked at again next tick.
func (r *libResolver) identifyAnon(k anonKey) {
	var head [pageKeyLen]byte
	if n, err := readProcMem(k.pid, k.start, head[:]); err != nil || n < len(head) {
		delete(r.anonTodo, k)
		return
	}
	if head == ([pageKeyLen]byte{}) {
		if r.anonTodo[k]--; r.anonTodo[k] <= 0 {
			delete(r.anonTodo, k)
		}
		return
	}
	delete(r.anonTodo, k)
	for _, lf := range r.procFiles[k.pid] {
		off, ok := lf.pageIndex()[head]
		if !ok {
			continue
		}
		n := min(k.end-k.start, pageSize)
		mem, file := make([]byte, n), make([]byte, n)
		if m, err := readProcMem(k.pid, k.start, mem); err != nil || m != len(mem) {
			return
		}
		if m, err := lf.fd.ReadAt(file, int64(off)); err != nil || m != len(file) || !bytes.Equal(mem, file) {
			continue
		}
		r.copies[k] = textCopy{file: lf, offset: off}
		return
	}
}

// pageIndex indexes the file's executable pages by their first bytes.
func (f *libFile) pageIndex() map[[pageKeyLen]byte]uint64 {
	if f.pages != nil || f.fd == nil {
		return f.pages
	}
	f.pages = make(map[[pageKeyLen]byte]uint64)
	var key [pageKeyLen]byte
	for _, p := range f.place.Segments() {
		if !p.Exec {
			continue
		}
		for off := p.Offset &^ (pageSize - 1); off < p.Offset+p.FileSize; off += pageSize {
			if n, err := f.fd.ReadAt(key[:], int64(off)); err != nil || n < len(key) {
				break
			}
			if _, dup := f.pages[key]; !dup && key != ([pageKeyLen]byte{}) {
				f.pages[key] = off
			}
		}
	}
	return f.pages
}

func (r *libResolver) refreshPerfMap(pid int) {
	st, err := os.Stat(symbolize.PerfMapPath(pid))
	if err != nil {
		return // keep what was read before it vanished
	}
	cur := perfMapStat{st.Size(), st.ModTime().UnixNano()}
	if r.perfStat[pid] == cur && r.perfMaps[pid] != nil {
		return
	}
	if pm, err := symbolize.LoadPerfMap(pid); err == nil {
		r.perfMaps[pid] = pm
		r.perfStat[pid] = cur
	}
}

// symbolize resolves every native address of p and stores the names in p.
// It hands symbolize what the recording opened and read: the binaries, by
// the key of their libs, and the JIT maps and jitdumps of the processes.
func (r *libResolver) symbolize(p *profile.Profile) (symbolize.Stats, error) {
	return r.symbolizeReading(p, true)
}

// symbolizeReading is symbolize; refresh says whether to read first what
// the JIT dumps gained since the last tick (symbolizeNow's callers did).
func (r *libResolver) symbolizeReading(p *profile.Profile, refresh bool) (symbolize.Stats, error) {
	bins := make(map[profile.LibKey]*objfile.File, len(r.byKey))
	for k, lf := range r.byKey {
		if lf.obj != nil {
			bins[k] = lf.obj
		}
	}
	dumps := make(map[int]symbolize.JITDump, len(r.jitDumps))
	for pid, d := range r.jitDumps {
		if refresh {
			// Runtimes buffer their writes (CPython flushes its dump
			// when it exits): read what came since the last tick.
			r.refreshJITDump(pid)
		}
		dumps[pid] = symbolize.JITDump{Path: d.path, File: d.f, Err: d.err}
	}
	return symbolize.Profile(p, symbolize.Options{
		SymbolDirs: r.symbolDirs,
		Remote:     r.remote,
		Binaries:   bins,
		PerfMaps:   r.perfMaps,
		JITDumps:   dumps,
	})
}

func keyOf(m *event.Map) fileKey { return fileKey{m.Path, m.Dev, m.Inode} }

// isFile reports whether a mapping is backed by a file gprof can open.
func isFile(path string) bool {
	// filepath.IsAbs also takes Windows paths (C:\...) on Windows.
	return (strings.HasPrefix(path, "/") || filepath.IsAbs(path)) && !strings.HasPrefix(path, "//anon")
}

// observe identifies the file behind m, once per file.
func (r *libResolver) observe(pid int, m *event.Map) {
	if m.Image != nil {
		return // identified by the backend
	}
	if isFile(m.Path) && isJITDump(m.Path) {
		r.noteJITDump(pid, m.Path)
		return
	}
	if !isFile(m.Path) {
		if m.Path != "[vdso]" && m.Path != "[vsyscall]" {
			r.jitPids[pid] = true
			r.refreshPerfMap(pid)
			k := anonKey{pid, m.Start, m.End}
			if _, done := r.copies[k]; !done {
				r.anonTodo[k] = anonChecks
			}
		}
		return
	}
	k := keyOf(m)
	lf, ok := r.files[k]
	if !ok {
		lf = r.open(m)
		r.files[k] = lf
	}
	if lf.fd != nil && !slices.Contains(r.procFiles[pid], lf) {
		r.procFiles[pid] = append(r.procFiles[pid], lf)
	}
}

// readAhead identifies the file at path as observe would at its first
// mapping, for a file a launched command maps as it starts.
func (r *libResolver) readAhead(path string) {
	dev, ino, ok := fileIDOf(path)
	if !ok {
		return
	}
	m := &event.Map{Path: path, Dev: dev, Inode: ino}
	if _, done := r.files[keyOf(m)]; !done {
		r.files[keyOf(m)] = r.open(m)
	}
}

func (r *libResolver) open(m *event.Map) *libFile {
	path := strings.TrimSuffix(m.Path, " (deleted)")
	fd, obj, err := openELF(path)
	if err == nil && !isMappedFile(obj.Identity(), path, m) {
		obj.Close()
		fd.Close()
		fd, obj, err = nil, nil, fmt.Errorf("%s was replaced on disk", path)
	}
	if obj == nil && m.MapFile != "" {
		// The map_files link reaches the very file that was mapped even
		// when its path is gone or names another file now.
		if mfd, mobj, merr := openELF(m.MapFile); merr == nil {
			fd, obj, err = mfd, mobj, nil
		}
	}
	lf := &libFile{fd: fd}
	if err != nil {
		if len(m.BuildID) > 0 {
			lf.id = idFromBuildID(path, m.BuildID)
		}
		lf.note = "unreadable"
		if os.IsNotExist(err) {
			lf.note = "deleted"
		}
		return lf
	}
	lf.identify(obj, path)
	return lf
}

// isMappedFile reports whether the file of identity id opened at path is
// the one the mapping m came from, by build-id when the kernel sent one,
// else by inode.
func isMappedFile(id objfile.Identity, path string, m *event.Map) bool {
	if len(m.BuildID) > 0 {
		return bytes.Equal(id.BuildID, m.BuildID)
	}
	if m.Inode != 0 {
		if ino, ok := inodeOf(path); ok {
			return ino == m.Inode
		}
	}
	return true
}

// idFromBuildID builds an identity from the kernel-reported build-id alone
// (little-endian, as on every platform gprof samples).
func idFromBuildID(path string, bid []byte) objfile.Identity {
	return objfile.Identity{
		Format:     objfile.ELF,
		Name:       filepath.Base(path),
		Path:       path,
		BreakpadID: objfile.BreakpadID(bid, true),
		CodeID:     fmt.Sprintf("%x", bid),
		BuildID:    append([]byte(nil), bid...),
		DebugName:  filepath.Base(path),
		DebugPath:  path,
		Arch:       archName(),
	}
}

// libsFor turns pr's mappings into the sorted, disjoint libs a profile
// needs.
func (r *libResolver) libsFor(pr *proc) []profile.Lib {
	libs := make([]profile.Lib, 0, len(pr.mappings))
	for i := range pr.mappings {
		if pr.mappings[i].unmap {
			continue
		}
		m := &pr.mappings[i].Map
		if l, ok := r.lib(m); ok {
			libs = append(libs, l)
		}
	}
	return profile.SortLibs(libs)
}

func (r *libResolver) lib(m *event.Map) (profile.Lib, bool) {
	l := profile.Lib{Start: m.Start, End: m.End, Arch: archName()}
	var lf *libFile
	fileOffset := m.FileOffset
	switch {
	case m.Image != nil:
		// No file to read: the backend's identity, placed by the
		// image's base. The path may be another system's (a Windows
		// trace replayed here), and so may the architecture: an
		// identity without one leaves it unknown, not this host's.
		l.Name, l.Path = imageBase(m.Path), m.Path
		l.DebugName, l.DebugPath = m.Image.DebugName, m.Image.DebugPath
		if l.DebugName == "" {
			l.DebugName = l.Name
		}
		if l.DebugPath == "" {
			l.DebugPath = m.Path
		}
		l.BreakpadID, l.CodeID = m.Image.BreakpadID, m.Image.CodeID
		if l.BreakpadID == "" {
			l.BreakpadID = zeroBreakpadID
		}
		l.Arch = m.Image.Arch
		l.Offset = m.Start - m.ImageBase
		return l, true
	case isFile(m.Path) && isJITDump(m.Path):
		return l, false // a JIT's notes, not code
	case m.Path == "[vdso]":
		lf = r.vdsoFile()
		l.Name, l.Path = "[vdso]", "[vdso]"
	case isFile(m.Path):
		lf = r.files[keyOf(m)]
		if lf == nil {
			lf = r.open(m)
			r.files[keyOf(m)] = lf
		}
		path := strings.TrimSuffix(m.Path, " (deleted)")
		l.Name, l.Path = filepath.Base(path), path
	default:
		if c, ok := r.copies[anonKey{m.Pid, m.Start, m.End}]; ok {
			// A copy of a file's text: placed like a mapping of it.
			lf, fileOffset = c.file, c.offset
			l.Name, l.Path = filepath.Base(lf.id.DebugPath), lf.id.DebugPath
			break
		}
		// Anonymous executable memory (JIT code). All of a process's
		// anonymous regions form one pseudo-library named like its JIT
		// map, perf-PID.map, whose relative addresses are the absolute
		// ones, so the map's entries apply to them directly.
		name := m.Path
		if name == "" || strings.HasPrefix(name, "//anon") {
			name = "[anon]"
		}
		key := profile.PerfMapKey(m.Pid)
		l.Name, l.Path = name, name
		l.DebugName, l.DebugPath = key.DebugName, symbolize.PerfMapPath(m.Pid)
		l.Offset = m.Start
		l.BreakpadID = zeroBreakpadID
		return l, true
	}
	if lf == nil {
		l.DebugName, l.DebugPath, l.BreakpadID = l.Name, l.Path, zeroBreakpadID
		return l, true
	}
	defer func() { r.byKey[l.Key()] = lf }()
	l.DebugName, l.DebugPath = lf.id.DebugName, lf.id.DebugPath
	l.BreakpadID, l.CodeID = lf.id.BreakpadID, lf.id.CodeID
	if l.BreakpadID == "" {
		l.BreakpadID = zeroBreakpadID
	}
	if lf.id.Arch != "" {
		l.Arch = lf.id.Arch
	}
	if lf.place.Known() {
		l.Offset = lf.place.LibOffset(m.Start, fileOffset)
	} else {
		// Without the file, assume the usual layout where file offsets
		// and relative addresses agree.
		l.Offset = fileOffset
	}
	if lf.note != "" {
		l.Name += " (" + lf.note + ")"
	}
	return l, true
}

// zeroBreakpadID stands for "no identity": the Firefox Profiler requires a
// string, and symbol servers will simply not know it.
const zeroBreakpadID = "000000000000000000000000000000000"

// imageBase is the file name of an image's path, a Windows one (C:\...)
// too whatever the host.
func imageBase(path string) string {
	if i := strings.LastIndexAny(path, `/\`); i >= 0 {
		return path[i+1:]
	}
	return path
}
