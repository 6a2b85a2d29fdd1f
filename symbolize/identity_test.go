package symbolize

import (
	"encoding/hex"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var readelfBuildID = regexp.MustCompile(`Build ID: ([0-9a-f]+)`)

func TestIdentitySystemFiles(t *testing.T) {
	for _, path := range []string{"/usr/lib/x86_64-linux-gnu/libc.so.6", "/usr/bin/ls"} {
		t.Run(filepath.Base(path), func(t *testing.T) {
			systemFile(t, path)
			m := readelfBuildID.FindStringSubmatch(run(t, "readelf", "-n", path))
			if m == nil {
				t.Skipf("%s has no build-id", path)
			}
			b, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			id := b.Identity()
			if id.CodeID != m[1] {
				t.Errorf("CodeID = %s, want %s", id.CodeID, m[1])
			}
			// Compute the GUID by string surgery rather than byte swaps.
			h := strings.ToUpper(m[1])
			want := h[6:8] + h[4:6] + h[2:4] + h[0:2] + h[10:12] + h[8:10] + h[14:16] + h[12:14] + h[16:32] + "0"
			if id.BreakpadID != want {
				t.Errorf("BreakpadID = %s, want %s", id.BreakpadID, want)
			}
			if id.DebugName != filepath.Base(path) || id.DebugPath != path || id.Arch != "x86_64" {
				t.Errorf("identity = %+v", id)
			}
			if id.Base != 0 {
				t.Errorf("Base = %#x, want 0 for a PIE/DSO", id.Base)
			}
		})
	}
}

func TestIdentityTextHash(t *testing.T) {
	bin := build(t, "nobuildid", "gcc", "-O2", "-Wl,--build-id=none", "-o", "OUT", "TESTDATA/prog.c")
	text := bin + ".text"
	run(t, "objcopy", "-O", "binary", "--only-section=.text", bin, text)
	data, err := os.ReadFile(text)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) > 4096 {
		data = data[:4096]
	}
	// Sum the columns of a 16-wide table of the first page instead of
	// folding byte by byte.
	var want strings.Builder
	var cols [16]byte
	for row := 0; row*16 < len(data); row++ {
		for c := 0; c < 16 && row*16+c < len(data); c++ {
			cols[c] ^= data[row*16+c]
		}
	}
	le := func(b []byte) string { return strings.ToUpper(hex.EncodeToString(b)) }
	want.WriteString(le([]byte{cols[3], cols[2], cols[1], cols[0], cols[5], cols[4], cols[7], cols[6]}))
	want.WriteString(le(cols[8:]))
	want.WriteString("0")

	b, err := Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	id := b.Identity()
	if id.BreakpadID != want.String() || id.CodeID != "" || id.BuildID != nil {
		t.Errorf("identity = %+v, want BreakpadID %s and no code ID", id, want.String())
	}
}

func TestOpenAltPath(t *testing.T) {
	bin := build(t, "prog", "gcc", "-g", "-O2", "-o", "OUT", "TESTDATA/prog.c")
	b, err := Open(filepath.Join(t.TempDir(), "gone"), AltPaths("", bin))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if b.OpenedPath() != bin || b.Identity().DebugName != "gone" || b.Identity().CodeID == "" {
		t.Errorf("opened %s, identity %+v", b.OpenedPath(), b.Identity())
	}
	if _, err := Open(filepath.Join(t.TempDir(), "gone")); err == nil {
		t.Error("Open of a missing file succeeded")
	}
}
