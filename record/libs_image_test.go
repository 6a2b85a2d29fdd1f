package record

import (
	"testing"

	"github.com/gprof-dev/gprof/event"
	"github.com/gprof-dev/gprof/objfile"
)

// An image the backend identified from memory (a macOS dyld shared cache
// library, whose path names no file on disk) gets that identity, and its
// addresses count from its start.
func TestLibFromMemoryImage(t *testing.T) {
	r := newLibResolver(nil)
	m := &event.Map{Pid: 7, Start: 0x18c000000, End: 0x18c080000,
		Path: "/usr/lib/system/libsystem_kernel.dylib",
		Image: &objfile.Identity{DebugName: "libsystem_kernel.dylib", BreakpadID: "0123456789ABCDEF0123456789ABCDEF0",
			CodeID: "0123456789ABCDEF0123456789ABCDEF", Arch: "arm64e"},
		ImageBase: 0x18c000000}
	l, ok := r.lib(m)
	if !ok {
		t.Fatal("no lib")
	}
	if l.BreakpadID != m.Image.BreakpadID || l.CodeID != m.Image.CodeID || l.Arch != "arm64e" {
		t.Errorf("lib identity %q %q %q, want the image's", l.BreakpadID, l.CodeID, l.Arch)
	}
	if l.Name != "libsystem_kernel.dylib" || l.DebugName != "libsystem_kernel.dylib" || l.Offset != 0 {
		t.Errorf("lib %q (debug %q) offset %#x", l.Name, l.DebugName, l.Offset)
	}
}
