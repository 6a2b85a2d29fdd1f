// Package backends links in the live sampling backends of the platform it
// is built for that are packages of their own, each of which registers
// itself with package attach: perf and ptrace on Linux. (The Windows and
// macOS backends are still part of package attach.) Import it for its
// side effect where recording is wired up:
//
//	import _ "github.com/gprof-dev/gprof/attach/backends"
package backends
