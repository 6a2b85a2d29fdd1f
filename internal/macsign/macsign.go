// Package macsign signs gprof with the entitlement macOS requires of a
// process that attaches to other processes without being root, as
// 'samply setup' does. It runs Apple's codesign tool, so it does anything
// only on macOS.
package macsign

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
)

// Entitlements is the plist gprof is signed with: the debugger
// entitlement, which lets task_for_pid reach the user's own processes
// that are not hardened (or that allow it with get-task-allow).
const Entitlements = `<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<plist version="1.0">
<dict>
	<key>com.apple.security.cs.debugger</key>
	<true/>
</dict>
</plist>
`

// Command returns the codesign command line that signs exe (ad hoc, for
// this machine only) with the entitlements in the file plist.
func Command(exe, plist string) []string {
	return []string{"codesign", "--force", "--options", "runtime", "--sign", "-", "--entitlements", plist, exe}
}

// ErrNotMacOS says there is nothing to set up on this OS.
var ErrNotMacOS = fmt.Errorf("gprof setup is only needed on macOS: on %s gprof needs no signing", runtime.GOOS)

// Sign signs exe with Entitlements. say receives the command it runs.
func Sign(exe string, say func(string)) error {
	if runtime.GOOS != "darwin" {
		return ErrNotMacOS
	}
	dir, err := os.MkdirTemp("", "gprof-setup-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	plist := filepath.Join(dir, "entitlements.plist")
	if err := os.WriteFile(plist, []byte(Entitlements), 0o644); err != nil {
		return err
	}
	args := Command(exe, plist)
	say(fmt.Sprintf("running: %q", args))
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("codesign failed (%v): %s; is Xcode's command line tools installed (xcode-select --install)?", err, out)
	}
	return nil
}
