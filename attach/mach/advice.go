package mach

import (
	"fmt"
	"strings"
)

// Code-signing status flags (csops CS_OPS_STATUS), from XNU's
// kern/cs_blobs.h.
const (
	csGetTaskAllow   = 0x00000004
	csRuntime        = 0x00010000
	csPlatformBinary = 0x04000000
)

// debuggerEntitlement lets a process that is not root attach to the
// user's own processes that allow it (get-task-allow, or not hardened).
const debuggerEntitlement = "com.apple.security.cs.debugger"

// attachFacts is what gprof found out about a refused task_for_pid.
type attachFacts struct {
	pid     int
	path    string // the target's executable, "" if unknown
	csFlags uint32 // the target's code-signing status; ok says it was read
	csOK    bool
	root    bool // gprof runs as root
	hasEnt  bool // gprof is signed with the debugger entitlement
	kr      string
}

// sipPath reports whether path is in a location System Integrity
// Protection guards (its binaries are platform binaries).
func sipPath(path string) bool {
	for _, p := range []string{"/System/", "/usr/", "/bin/", "/sbin/", "/Library/Apple/"} {
		if strings.HasPrefix(path, p) && !strings.HasPrefix(path, "/usr/local/") {
			return true
		}
	}
	return false
}

// attachAdvice says, in one line, why macOS refused to hand gprof a
// target's task port and what to do about it.
func attachAdvice(f attachFacts) string {
	what := fmt.Sprintf("pid %d", f.pid)
	if f.path != "" {
		what += " (" + f.path + ")"
	}
	switch {
	case (f.csOK && f.csFlags&csPlatformBinary != 0) || sipPath(f.path):
		return what + " is a system binary protected by System Integrity Protection: macOS lets no process attach to it, not even root; profile your own build, or a copy of the program outside /System and /usr"
	case f.csOK && f.csFlags&csRuntime != 0 && f.csFlags&csGetTaskAllow == 0:
		return what + " uses the hardened runtime without the get-task-allow entitlement, so macOS refuses to attach to it, even for root; profile a development build, or re-sign a copy: codesign -f -s - --entitlements get-task-allow.plist PATH"
	case !f.root && !f.hasEnt:
		return fmt.Sprintf("gprof is not signed with the %s entitlement, which attaching to %s needs: run 'gprof setup' once (it signs gprof with it), or run gprof as root (sudo)", debuggerEntitlement, what)
	case !f.root:
		return fmt.Sprintf("macOS refused gprof the task port of %s (%s): a process that is not root may attach only to the same user's processes that are not hardened; run gprof as root (sudo)", what, f.kr)
	}
	return fmt.Sprintf("macOS refused gprof the task port of %s even as root (%s): the process may be exiting, or protected in a way gprof does not know", what, f.kr)
}
