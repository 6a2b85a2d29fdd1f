package symbolize

import (
	"strings"

	"github.com/ianlancetaylor/demangle"
)

// Demangle turns a C++ (Itanium) or Rust (legacy or v0) symbol into the
// name gprof shows, and returns other names unchanged.
//
// Parameter lists are dropped (NoParams, NoEnclosingParams): they make
// frames in a flame graph several times wider without telling hot code
// apart any better, and overloads are rarely both hot. Template arguments
// stay, because instantiations are different code (Box<int>::total and
// Box<double>::total should not merge), as do clone suffixes such as
// [clone .constprop.0], which are different code too. Rust hashes are
// dropped by the demangler.
func Demangle(name string) string {
	if !strings.HasPrefix(name, "_Z") && !strings.HasPrefix(name, "_R") {
		return name
	}
	return demangle.Filter(name, demangle.NoParams, demangle.NoEnclosingParams)
}

func (ix *index) demangle(name string) string {
	if !strings.HasPrefix(name, "_Z") && !strings.HasPrefix(name, "_R") {
		return name
	}
	ix.mu.Lock()
	d, ok := ix.demangled[name]
	ix.mu.Unlock()
	if !ok {
		d = Demangle(name)
		ix.mu.Lock()
		ix.demangled[name] = d
		ix.mu.Unlock()
	}
	return d
}
