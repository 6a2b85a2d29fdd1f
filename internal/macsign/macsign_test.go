package macsign

import (
	"runtime"
	"slices"
	"strings"
	"testing"
)

func TestCommandAndEntitlements(t *testing.T) {
	args := Command("/usr/local/bin/gprof", "/tmp/e.plist")
	if args[0] != "codesign" || !slices.Contains(args, "--entitlements") || args[len(args)-1] != "/usr/local/bin/gprof" {
		t.Errorf("command %q", args)
	}
	if !strings.Contains(Entitlements, "<key>com.apple.security.cs.debugger</key>\n\t<true/>") {
		t.Error("the plist does not grant the debugger entitlement")
	}
}

func TestSignOnlyOnMacOS(t *testing.T) {
	if runtime.GOOS == "darwin" {
		t.Skip("signs for real on macOS")
	}
	if err := Sign("/nonexistent", func(string) {}); err != ErrNotMacOS || !strings.Contains(err.Error(), "only needed on macOS") {
		t.Errorf("Sign on %s: %v", runtime.GOOS, err)
	}
}
