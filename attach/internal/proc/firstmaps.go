//go:build linux

package proc

import (
	"bufio"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/gprof-dev/gprof/objfile"
)

// maxFirstMapped bounds the files FirstMapped names: a program linked to
// hundreds of libraries gets its first ones read ahead, the rest as
// their samples come.
const maxFirstMapped = 32

// FirstMapped names the files a command launched as Launch would launch
// it maps as it starts: its executable (or a script's interpreter), the
// dynamic loader and the libraries they need, found as the loader would
// find them in most cases (RPATH and RUNPATH, LD_LIBRARY_PATH, the
// system's library folders), with symbolic links resolved, as the kernel
// names mapped files. A guess: a name it gets wrong costs reading a file
// for nothing, as it is only read ahead.
func FirstMapped(argv, env []string, dir string) []string {
	if len(argv) == 0 {
		return nil
	}
	if env == nil {
		env = os.Environ()
	}
	pathEnv := envValue(env, "PATH")
	path, err := lookPath(argv[0], pathEnv, dir)
	if err != nil {
		return nil
	}
	if interp := scriptInterpreter(path, pathEnv, dir); interp != "" {
		path = interp
	}
	var ldPath []string
	for _, d := range filepath.SplitList(envValue(env, "LD_LIBRARY_PATH")) {
		if d != "" {
			ldPath = append(ldPath, d)
		}
	}
	var out []string
	seen := map[string]bool{}
	add := func(p string) bool {
		real, err := filepath.EvalSymlinks(p)
		if err != nil || seen[real] || len(out) >= maxFirstMapped {
			return false
		}
		seen[real] = true
		out = append(out, real)
		return true
	}
	// Breadth first, as the loader loads them.
	queue := []string{path}
	if !add(path) {
		return nil
	}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		f, err := objfile.Open(p)
		if err != nil {
			continue
		}
		l, ok := f.Loading()
		f.Close()
		if !ok {
			continue
		}
		if l.Interp != "" {
			add(l.Interp)
		}
		// RPATH before LD_LIBRARY_PATH, RUNPATH after it, and RPATH
		// ignored where there is a RUNPATH.
		origin := strings.NewReplacer("${ORIGIN}", filepath.Dir(p), "$ORIGIN", filepath.Dir(p))
		var dirs []string
		if len(l.RunPath) == 0 {
			dirs = append(dirs, l.RPath...)
		}
		dirs = append(dirs, ldPath...)
		dirs = append(dirs, l.RunPath...)
		for i, d := range dirs {
			dirs[i] = origin.Replace(d)
		}
		for _, name := range l.Needed {
			if lib := findLibrary(name, dirs); lib != "" && add(lib) {
				queue = append(queue, lib)
			}
		}
	}
	return out
}

// scriptInterpreter returns the interpreter a "#!" script at path runs
// under (what env runs, looked up in PATH, for "#!/usr/bin/env prog"), or
// "" for anything else.
func scriptInterpreter(path, pathEnv, dir string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	line, err := bufio.NewReader(f).ReadString('\n')
	if !strings.HasPrefix(line, "#!") || (err != nil && len(line) < 3) {
		return ""
	}
	words := strings.Fields(line[2:])
	if len(words) == 0 {
		return ""
	}
	if filepath.Base(words[0]) == "env" {
		for _, w := range words[1:] {
			if !strings.HasPrefix(w, "-") && !strings.Contains(w, "=") {
				p, err := lookPath(w, pathEnv, dir)
				if err != nil {
					return ""
				}
				return p
			}
		}
		return ""
	}
	return words[0]
}

// findLibrary finds the library the loader would load for name: in dirs
// (the object's and LD_LIBRARY_PATH's), then the system's.
func findLibrary(name string, dirs []string) string {
	if strings.Contains(name, "/") {
		return name
	}
	for _, d := range slices.Concat(dirs, systemLibDirs()) {
		p := filepath.Join(d, name)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			return p
		}
	}
	return ""
}

// systemLibDirs are the folders the loader searches last (through its
// cache of them): Debian's and Fedora's.
func systemLibDirs() []string {
	triple := map[string]string{"amd64": "x86_64-linux-gnu", "arm64": "aarch64-linux-gnu", "386": "i386-linux-gnu"}[runtime.GOARCH]
	dirs := []string{"/lib64", "/usr/lib64", "/lib", "/usr/lib", "/usr/local/lib"}
	if triple != "" {
		dirs = append([]string{"/lib/" + triple, "/usr/lib/" + triple}, dirs...)
	}
	return dirs
}
