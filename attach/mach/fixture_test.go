package mach

// Fixtures for the macOS backend's tests, made at test time from real
// Mach-O files: Go programs cross-built for darwin, and clang objects
// compiled for Apple targets (skipped where clang is missing).

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/gprof-dev/gprof/objfile"
)

// darwinGo cross-builds a small Go program for darwin/arch and returns
// the file's bytes. variant changes the program, and so its UUID.
func darwinGo(t *testing.T, arch, variant string) []byte {
	t.Helper()
	dir := t.TempDir()
	src := "package main\n\nvar v = \"" + variant + "\"\n\nfunc main() { println(v) }\n"
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "prog")
	cmd := exec.Command("go", "build", "-o", out, "main.go")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOOS=darwin", "GOARCH="+arch, "CGO_ENABLED=0", "GOFLAGS=", "GO111MODULE=off")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("GOOS=darwin GOARCH=%s go build: %v\n%s", arch, err, b)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// clangObject compiles C source for an Apple target triple and returns
// the object file's bytes.
func clangObject(t *testing.T, target, src string) []byte {
	t.Helper()
	clang, err := exec.LookPath("clang")
	if err != nil {
		t.Skip("clang is not installed (./test.sh installs it)")
	}
	dir := t.TempDir()
	in, out := filepath.Join(dir, "f.c"), filepath.Join(dir, "f.o")
	if err := os.WriteFile(in, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := exec.Command(clang, "--target="+target, "-O1", "-fno-omit-frame-pointer", "-c", in, "-o", out).CombinedOutput(); err != nil {
		t.Fatalf("clang --target=%s: %v\n%s", target, err, b)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// oracle is what objfile reads from a whole Mach-O file through std
// debug/macho: the reference the memory decoder is checked against.
type oracle struct {
	uuid               [16]byte
	textAddr, textSize uint64
	arch               string
	sizeofcmds         int
}

func machoOracle(t *testing.T, file []byte) oracle {
	t.Helper()
	f, err := objfile.NewFile(bytesReader(file), "fixture")
	if err != nil {
		t.Fatal(err)
	}
	img, ok := f.MachOImage()
	if !ok {
		t.Fatal("not a 64-bit Mach-O image with __TEXT and LC_UUID")
	}
	return oracle{uuid: img.UUID, textAddr: img.TextAddr, textSize: img.TextSize, arch: img.Arch, sizeofcmds: img.HeaderSize}
}

func bytesReader(b []byte) *bytes.Reader { return bytes.NewReader(b) }
