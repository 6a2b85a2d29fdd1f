package view

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/gprof-dev/gprof/objfile"
	"github.com/gprof-dev/gprof/profile"
	"github.com/gprof-dev/gprof/symbolize"
)

// lookup returns what lib-relative address addr of lib k is, outer
// function first, and whether the library is known at all (stored names
// or a binary with its identity).
//
// The front-end asks for a caller's frame one byte lower than its return
// address, inside the call instruction, which is where symbolizers file
// it (profile.LookupAddr); tables written before that filed it under the
// return address itself, so addr+1 is tried when addr has nothing.
func (s *Server) lookup(k profile.LibKey, addr uint64) (frames []profile.SymbolFrame, known bool) {
	if s.syms != nil && s.syms.Libs[k] != nil {
		known = true
		if f := s.syms.Lookup(k, addr); len(f) > 0 {
			return s.oneFilePerFunc(k, f), true
		}
		if f := s.syms.Lookup(k, addr+1); len(f) > 0 {
			return s.oneFilePerFunc(k, f), true
		}
	}
	if k.DebugName == KernelLibName {
		if f := s.kernelLookup(k, addr); f != nil {
			return f, true
		}
		return nil, known
	}
	b := s.binary(k)
	if b.b == nil {
		return nil, known
	}
	if s.trapAt(k, addr+1) {
		addr++
	}
	return b.b.Lookup(addr), true
}

// trapAt reports whether the front-end's question about addr-1 of lib k
// is about the frame at addr where a thread trapped into the kernel (a
// user frame under a kernel frame): the front-end nudges every frame
// but a stack's leaf one byte lower, as it would a return address, but
// such a frame is the instruction that faulted or made the system call,
// which symbolizers look up as it is (symbolize.Profile, gprof report):
// at a function's last byte or just past it, the nudge names the other
// function. Not when addr-1 is itself a sampled instruction or addr a
// return address too.
func (s *Server) trapAt(k profile.LibKey, addr uint64) bool {
	r := s.roles[k]
	return r[addr] == roleTrap && !r.is(addr-1, roleLeaf)
}

// oneFilePerFunc returns frames with each function's file the one it is
// shown under (profile.SymbolTable.FuncFiles); lines stay the frames' own.
func (s *Server) oneFilePerFunc(k profile.LibKey, frames []profile.SymbolFrame) []profile.SymbolFrame {
	ff := s.funcFiles[k]
	var out []profile.SymbolFrame
	for i, f := range frames {
		if file := ff[f.Function]; file != "" && file != f.File {
			if out == nil {
				out = append([]profile.SymbolFrame(nil), frames...)
			}
			out[i].File = file
		}
	}
	if out == nil {
		return frames
	}
	return out
}

// KernelLibName is the library gprof record makes of the running kernel,
// as perf and samply name it; its relative addresses count from _stext.
const KernelLibName = "[kernel.kallsyms]"

// runningKernelBreakpadID is the running kernel's identity as gprof record
// writes it for KernelLibName.
func runningKernelBreakpadID() (string, error) {
	id, err := symbolize.KernelBuildID()
	if err != nil {
		return "", err
	}
	return objfile.BreakpadID(id, true), nil
}

// kernelLookup names address addr of kernel lib k from the running
// kernel's symbols, if the profile was recorded on this very kernel (an
// identity of zeros, a kernel without a build-id, is taken on trust, as
// gprof report does).
func (s *Server) kernelLookup(k profile.LibKey, addr uint64) []profile.SymbolFrame {
	if len(s.libs[k]) == 0 {
		return nil
	}
	if strings.Trim(k.BreakpadID, "0") != "" {
		if id, err := s.kernelBreakpadID(); err != nil || id != k.BreakpadID {
			return nil
		}
	}
	ks, err := s.kernel()
	if err != nil {
		return nil
	}
	l := s.libs[k][0]
	base := l.Start - l.Offset
	sym, ok := ks.Lookup(addr + base)
	if !ok {
		return nil
	}
	name := sym.Name
	if sym.Module != "" {
		name += " [" + sym.Module + "]"
	}
	return []profile.SymbolFrame{{Function: name, FuncAddr: sym.Addr - base, FuncSize: sym.Size}}
}

// roles are what the lib-relative addresses of one library's frames are
// in the profile: sampled instructions (leaves), return addresses
// (callers), and the user frames directly under a kernel frame, where a
// thread trapped (traps). An address may be more than one.
type roles map[uint64]uint8

const (
	roleLeaf = 1 << iota
	roleCaller
	roleTrap
)

// is reports whether addr has role role.
func (r roles) is(addr uint64, role uint8) bool { return r[addr]&role != 0 }

func frameRoles(p *profile.Profile) map[profile.LibKey]roles {
	out := map[profile.LibKey]roles{}
	for _, proc := range p.Processes {
		for _, th := range proc.Threads {
			frames := th.Frames.Frames
			mark := func(fi int32, role uint8) {
				if fi < 0 || int(fi) >= len(frames) {
					return
				}
				f := frames[fi]
				l := profile.FindLib(proc.Libs, f.Address)
				if f.Label != "" || l == nil {
					return
				}
				r := out[l.Key()]
				if r == nil {
					r = roles{}
					out[l.Key()] = r
				}
				r[l.Rel(f.Address)] |= role
			}
			st := &th.Stacks
			for _, sk := range th.Samples.Stack {
				if sk >= 0 && int(sk) < len(st.Frame) {
					mark(st.Frame[sk], roleLeaf)
				}
			}
			for sk, pre := range st.Prefix {
				if pre < 0 || int(pre) >= len(st.Frame) {
					continue
				}
				// As symbolize.Profile decides: the user frame under a
				// kernel frame is where the thread trapped.
				fi, pf := st.Frame[sk], st.Frame[pre]
				if int(fi) < len(frames) && int(pf) < len(frames) &&
					frames[fi].Category == profile.CategoryKernel && frames[pf].Category != profile.CategoryKernel {
					mark(pf, roleTrap)
				} else {
					mark(pf, roleCaller)
				}
			}
		}
	}
	return out
}

// fallbackName names an address nothing resolves the way gprof report
// does, "LIB+0xOFFSET", at the frame's own address: for a caller the
// return address, which the front-end asked about one byte lower.
func (s *Server) fallbackName(k profile.LibKey, addr uint64) string {
	if r := s.roles[k]; !r.is(addr, roleLeaf) && r.is(addr+1, roleCaller|roleTrap) {
		addr++
	}
	return s.libs[k][0].Name + "+" + hex(addr)
}

// binary opens, once, the binary of lib k from this machine: at a path the
// profile recorded for it, or by name in a symbol directory, as long as it
// is the same build.
func (s *Server) binary(k profile.LibKey) *binary {
	s.mu.Lock()
	defer s.mu.Unlock()
	if b := s.bins[k]; b != nil {
		return b
	}
	b := &binary{}
	s.bins[k] = b
	var paths []string
	for _, l := range s.libs[k] {
		// A relative path is a pseudo-library ("[kernel.kallsyms]",
		// "[anon]"), not a file.
		for _, p := range []string{l.Path, l.DebugPath} {
			if filepath.IsAbs(p) {
				paths = append(paths, p)
			}
		}
		for _, d := range s.symbolDirs {
			paths = append(paths, filepath.Join(d, l.Name), filepath.Join(d, l.DebugName))
		}
	}
	if len(s.libs[k]) == 0 {
		for _, d := range s.symbolDirs {
			paths = append(paths, filepath.Join(d, k.DebugName))
		}
	}
	tried := map[string]bool{}
	for _, p := range paths {
		if tried[p] {
			continue
		}
		tried[p] = true
		bin, err := symbolize.Open(p, symbolize.SymbolDirs(s.symbolDirs...))
		if err != nil {
			b.err = err
			continue
		}
		if id := bin.Identity().BreakpadID; id != k.BreakpadID {
			b.err = fmt.Errorf("%s is build %s, not %s", p, id, k.BreakpadID)
			bin.Close()
			continue
		}
		b.b, b.err = bin, nil
		break
	}
	return b
}

// v5Request is Tecken's /symbolicate/v5 request: jobs, or one bare job.
type v5Request struct {
	Jobs []v5Job `json:"jobs"`
	v5Job
}

type v5Job struct {
	MemoryMap [][2]string  `json:"memoryMap"`
	Stacks    [][][2]int64 `json:"stacks"`
}

type v5Result struct {
	Stacks       [][]v5Frame     `json:"stacks"`
	FoundModules map[string]bool `json:"found_modules"`
}

type v5Frame struct {
	Frame          int        `json:"frame"`
	ModuleOffset   string     `json:"module_offset"`
	Module         string     `json:"module"`
	Function       string     `json:"function,omitempty"`
	FunctionOffset string     `json:"function_offset,omitempty"`
	FunctionSize   string     `json:"function_size,omitempty"`
	File           string     `json:"file,omitempty"`
	Line           int        `json:"line,omitempty"`
	Inlines        []v5Inline `json:"inlines,omitempty"`
}

type v5Inline struct {
	Function string `json:"function,omitempty"`
	File     string `json:"file,omitempty"`
	Line     int    `json:"line,omitempty"`
}

func hex(v uint64) string { return "0x" + strconv.FormatUint(v, 16) }

// symbolicate answers /symbolicate/v5.
func (s *Server) symbolicate(body []byte) (any, int, error) {
	var req v5Request
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, http.StatusBadRequest, fmt.Errorf("bad /symbolicate/v5 request: %v", err)
	}
	jobs := req.Jobs
	if jobs == nil && req.MemoryMap != nil {
		jobs = []v5Job{req.v5Job}
	}
	results := make([]v5Result, len(jobs))
	for i, job := range jobs {
		results[i] = s.job(job)
	}
	return map[string]any{"results": results}, http.StatusOK, nil
}

func (s *Server) job(job v5Job) v5Result {
	res := v5Result{FoundModules: map[string]bool{}, Stacks: make([][]v5Frame, len(job.Stacks))}
	keys := make([]profile.LibKey, len(job.MemoryMap))
	for i, m := range job.MemoryMap {
		keys[i] = profile.LibKey{DebugName: m[0], BreakpadID: m[1]}
		res.FoundModules[m[0]+"/"+m[1]] = false
	}
	for si, stack := range job.Stacks {
		out := make([]v5Frame, len(stack))
		for fi, fr := range stack {
			mod, off := fr[0], fr[1]
			out[fi] = v5Frame{Frame: fi, ModuleOffset: hex(uint64(off))}
			if mod < 0 || int(mod) >= len(keys) || off < 0 {
				continue
			}
			k := keys[mod]
			out[fi].Module = k.DebugName
			frames, known := s.lookup(k, uint64(off))
			if len(frames) == 0 && len(s.libs[k]) > 0 {
				// A library of the profile: name what nothing resolves
				// as report does, rather than leave the front-end a bare
				// address.
				frames, known = []profile.SymbolFrame{{Function: s.fallbackName(k, uint64(off))}}, true
			}
			if known {
				res.FoundModules[k.DebugName+"/"+k.BreakpadID] = true
			}
			if len(frames) > 0 {
				fillFrame(&out[fi], uint64(off), frames)
			}
		}
		res.Stacks[si] = out
	}
	return res
}

// fillFrame turns the model's frames (outer first, each with its own
// location) into a v5 frame: the outer function with its location, and
// the inlined callees ordered inside to outside.
func fillFrame(f *v5Frame, addr uint64, frames []profile.SymbolFrame) {
	outer := frames[0]
	f.Function = outer.Function
	// An unknown start makes the address its own symbol; the front-end
	// still merges frames by function name.
	var off uint64
	if outer.FuncAddr != 0 && outer.FuncAddr <= addr {
		off = addr - outer.FuncAddr
	}
	f.FunctionOffset = hex(off)
	if outer.FuncSize != 0 {
		f.FunctionSize = hex(outer.FuncSize)
	}
	f.File, f.Line = outer.File, outer.Line
	for i := len(frames) - 1; i >= 1; i-- {
		in := frames[i]
		f.Inlines = append(f.Inlines, v5Inline{Function: in.Function, File: in.File, Line: in.Line})
	}
}
