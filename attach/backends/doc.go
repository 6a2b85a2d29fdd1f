// Package backends links in the live sampling backends of the platform it
// is built for, each of which registers itself with package attach:
// perf and ptrace on Linux, etw and suspend on Windows, mach on macOS.
// Import it for its side effect where recording is wired up:
//
//	import _ "github.com/gprof-dev/gprof/attach/backends"
package backends
