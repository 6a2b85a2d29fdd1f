package record

import (
	"cmp"
	"slices"
	"strings"

	"github.com/gprof-dev/gprof/profile"
)

// waitRef is a wait marker whose payload is named once the profile's
// names are resolved: frames is the stack it waited in, leaf first.
// The payload map is shared with the marker, so it is found even after a
// bounded recording dropped older markers.
type waitRef struct {
	pr      *profile.Process
	data    map[string]any
	blocked bool
	frames  []profile.Frame
	wchan   string // from the backend, when it read it
}

// stackNames is how many callers a wait marker lists.
const stackNames = 4

// nameWaits fills the payloads of wait markers: the function the thread
// waited in, its callers, and from kernel frames (with --kernel) the
// system call and the wait channel, the kernel function below the
// scheduler where it slept.
func nameWaits(p *profile.Profile, waits []waitRef) {
	libsOf := map[*profile.Process][]profile.Lib{}
	kernel, kernOK := p.Symbols.KernelLib()
	for _, w := range waits {
		libs, ok := libsOf[w.pr]
		if !ok {
			libs = slices.Clone(w.pr.Libs)
			slices.SortStableFunc(libs, func(a, b profile.Lib) int { return cmp.Compare(a.Start, b.Start) })
			libsOf[w.pr] = libs
		}
		var user []string
		syscall, wchan := "", w.wchan
		for i, f := range w.frames {
			for _, name := range frameNames(p, libs, kernel, kernOK, f, i > 0) {
				if f.Category != profile.CategoryKernel {
					// A function shows once however many of its
					// addresses the stack holds.
					if len(user) == 0 || user[len(user)-1] != name {
						user = append(user, name)
					}
					continue
				}
				if wchan == "" && !schedulerFunc(name) {
					wchan = name
				}
				if syscall == "" {
					syscall = syscallName(name)
				}
			}
		}
		if !w.blocked {
			syscall, wchan = "", "" // preempted: not a wait of its own
		}
		d := w.data
		if len(user) > 0 {
			d["function"] = user[0]
			d["stack"] = strings.Join(user[1:min(len(user), 1+stackNames)], " ← ")
		}
		if syscall != "" {
			d["syscall"] = syscall
		}
		if wchan != "" {
			d["wchan"] = wchan
		}
	}
}

// frameNames returns f's function names, innermost (inlined) first.
func frameNames(p *profile.Profile, libs []profile.Lib, kernel profile.LibKey, kernOK bool, f profile.Frame, caller bool) []string {
	if f.Label != "" {
		return []string{f.Label}
	}
	var syms []profile.SymbolFrame
	fallback := ""
	if l := profile.FindLib(libs, f.Address); l != nil {
		rel := l.Rel(f.Address)
		syms = p.Symbols.LookupFrame(l.Key(), rel, caller)
		fallback = l.Name + "+0x" + hexString(rel)
	} else {
		if kernOK && f.Category == profile.CategoryKernel {
			syms = p.Symbols.LookupFrame(kernel, f.Address, caller)
		}
		fallback = "0x" + hexString(f.Address)
	}
	if len(syms) == 0 {
		return []string{fallback}
	}
	out := make([]string, 0, len(syms))
	for i := len(syms) - 1; i >= 0; i-- {
		out = append(out, syms[i].Function)
	}
	return out
}

func hexString(v uint64) string {
	const digits = "0123456789abcdef"
	var b [16]byte
	for i := 15; i >= 0; i-- {
		b[i] = digits[v&15]
		v >>= 4
	}
	s := strings.TrimLeft(string(b[:]), "0")
	if s == "" {
		return "0"
	}
	return s
}

// schedulerFunc says whether a kernel function is the scheduler's own,
// above the function that decided to wait.
func schedulerFunc(name string) bool {
	for _, s := range []string{"schedule", "__switch_to", "finish_task_switch", "context_switch", "__traceiter", "perf_"} {
		if strings.Contains(name, s) {
			return true
		}
	}
	return false
}

// syscallName returns the system call a kernel entry function implements
// ("__x64_sys_read" → "read"), or "".
func syscallName(name string) string {
	for _, p := range []string{"__x64_sys_", "__arm64_sys_", "__ia32_sys_", "__se_sys_", "__do_sys_", "ksys_", "sys_"} {
		if strings.HasPrefix(name, p) {
			return strings.TrimPrefix(name, p)
		}
	}
	return ""
}
