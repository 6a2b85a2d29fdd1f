package symbolize

import (
	"path/filepath"
	"strings"

	"github.com/gprof-dev/gprof/profile"
)

// JITPrefix starts the name of JIT code that neither a jitdump nor a perf
// map names: "[JIT] node", the runtime's whole region of anonymous
// executable memory as one function, as perf's "[JIT] tid N" is.
const JITPrefix = "[JIT] "

// region names the JIT code at absolute address at by the anonymous
// mapping that holds it: "[JIT] " and the runtime, with the mapping's
// bounds. A runtime writes code at thousands of addresses and rewrites it
// as it runs; unnamed, each address was a row of its own. The frame
// table keeps the addresses.
func (g *group) region(at, base uint64, runtime string) (profile.SymbolFrame, bool) {
	for _, c := range g.cands {
		if l := c.lib; l.Start <= at && at < l.End {
			return profile.SymbolFrame{Function: JITPrefix + runtime, FuncAddr: l.Start - base, FuncSize: l.End - l.Start}, true
		}
	}
	return profile.SymbolFrame{}, false
}

// JITRuntime names the runtime whose JIT code a process runs, as far as
// its binaries and name tell: "node", "java", "python", "dotnet"..., else
// the process's name.
func JITRuntime(pr *profile.Process) string {
	name := strings.ToLower(pr.Name)
	has := func(prefix string) bool {
		for _, l := range pr.Libs {
			if strings.HasPrefix(strings.ToLower(filepath.Base(l.Name)), prefix) {
				return true
			}
		}
		return false
	}
	switch {
	case has("libjvm"):
		return "java"
	case has("libcoreclr"):
		return "dotnet"
	case has("libmonosgen") || name == "mono":
		return "mono"
	case name == "node" || name == "nodejs" || has("libnode"):
		return "node"
	case name == "deno":
		return "deno"
	case strings.HasPrefix(name, "python") || has("libpython"):
		return "python"
	case name != "":
		return pr.Name
	}
	return "anonymous memory"
}

// PerfMapHint says how runtime (as JITRuntime names it) would name its JIT
// code for gprof: the flag or setting that makes it write a perf map or a
// jitdump.
func PerfMapHint(runtime string) string {
	switch runtime {
	case "node":
		return "node --perf-basic-prof names it"
	case "deno":
		return "deno --v8-flags=--perf-basic-prof names it"
	case "java":
		return "java -XX:+UnlockDiagnosticVMOptions -XX:+DumpPerfMapAtExit (JDK 17+) or perf-map-agent names it"
	case "dotnet":
		return "DOTNET_PerfMapEnabled=1 names it"
	case "mono":
		return "mono --jitmap names it"
	case "python":
		return "python -X perf (3.12+) names it"
	}
	return "a perf map from the runtime (/tmp/perf-PID.map) names it"
}
