package perfdata

import (
	"bufio"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/gprof-dev/gprof/event"
	"github.com/gprof-dev/gprof/format"
	"github.com/gprof-dev/gprof/profile"
	"github.com/gprof-dev/gprof/record"
)

// Options configure Read.
type Options struct {
	// ModTime is when the file was written (perf writes it as recording
	// stops); it dates the profile. Zero means now.
	ModTime    time.Time
	SymbolDirs []string
	// BuildIDDir is perf's build-id cache, where 'perf record' keeps a
	// copy of every binary it sampled; "" means $PERF_BUILDID_DIR or
	// ~/.debug, as perf.
	BuildIDDir string
}

// Read reads a perf.data file and builds the profile: stacks unwound
// (dwarf mode) and named from the binaries the recording mapped, found by
// path, or in perf's build-id cache when the path now holds another build.
func Read(r io.Reader, opts Options) (*profile.Profile, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("cannot read perf.data: %w", err)
	}
	f, err := Parse(data)
	if err != nil {
		return nil, err
	}
	return f.Profile(opts), nil
}

// Profile builds the profile of f's sampled event.
func (f *File) Profile(opts Options) *profile.Profile {
	a := f.SampledAttr()
	meta := profile.Meta{
		Product:     "perf",
		Interval:    time.Millisecond,
		Platform:    "Linux",
		Arch:        f.Arch,
		LogicalCPUs: f.CPUsOnline,
		CPUName:     f.CPUDesc,
		OSCPU:       strings.TrimSpace("Linux " + f.OSRelease),
		Extra: map[string]string{
			"backend": "perf.data",
			"event":   a.Name,
		},
	}
	switch {
	case a.Freq:
		meta.Interval = time.Second / time.Duration(a.Period)
	case a.IsClock():
		meta.Interval = time.Duration(a.Period)
	}
	if meta.Interval <= 0 {
		meta.Interval = time.Millisecond
	}
	if len(f.Attrs) > 1 {
		meta.Extra["events"] = strings.Join(f.EventNames(), ",")
		meta.Extra["note"] = fmt.Sprintf("the recording has %d events; only %s was converted", len(f.Attrs), a.Name)
	}
	if f.Hostname != "" {
		meta.Extra["host"] = f.Hostname
	}
	if len(f.Cmdline) > 0 {
		meta.Extra["command"] = strings.Join(f.Cmdline, " ")
	}
	end := f.LastTime
	meta.StartTime = opts.ModTime
	if meta.StartTime.IsZero() {
		meta.StartTime = time.Now()
	}
	meta.StartTime = meta.StartTime.Add(-time.Duration(end - f.FirstTime))

	cacheDir := opts.BuildIDDir
	if cacheDir == "" {
		cacheDir = os.Getenv("PERF_BUILDID_DIR")
	}
	if cacheDir == "" {
		if home, err := os.UserHomeDir(); err == nil {
			cacheDir = filepath.Join(home, ".debug")
		}
	}
	for _, e := range f.Events {
		if m, ok := e.(*event.Map); ok && len(m.BuildID) > 0 && cacheDir != "" {
			// The cache keeps the binary as it was recorded, even after
			// the path is rebuilt; the builder tries it when the path's
			// build-id differs.
			id := hex.EncodeToString(m.BuildID)
			p := filepath.Join(cacheDir, ".build-id", id[:2], id[2:], "elf")
			if _, err := os.Stat(p); err == nil {
				m.MapFile = p
			}
		}
	}
	return record.Replay(f.Events, record.ReplayOptions{
		Meta:       meta,
		Start:      f.FirstTime,
		End:        end,
		Unwind:     f.Arch == "" || f.Arch == hostArch(),
		Kernel:     f.sameKernel(),
		Symbolize:  true,
		SymbolDirs: opts.SymbolDirs,
	})
}

func hostArch() string {
	switch runtime.GOARCH {
	case "amd64":
		return "x86_64"
	case "arm64":
		return "aarch64"
	}
	return runtime.GOARCH
}

// sameKernel reports whether the file was recorded under the running
// kernel, at the same (KASLR) addresses, so its symbols name the kernel
// frames.
func (f *File) sameKernel() bool {
	if runtime.GOOS != "linux" || f.KernelMapStart == 0 {
		return false
	}
	rel, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil || f.OSRelease != "" && strings.TrimSpace(string(rel)) != f.OSRelease {
		return false
	}
	return kallsymsText() == f.KernelMapStart
}

// kallsymsText returns the running kernel's _text address, 0 if hidden.
func kallsymsText() uint64 {
	fh, err := os.Open("/proc/kallsyms")
	if err != nil {
		return 0
	}
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 3 && fields[2] == "_text" {
			a, _ := strconv.ParseUint(fields[0], 16, 64)
			return a
		}
	}
	return 0
}

// Kind is how package format names perf.data files.
const Kind format.Kind = "perf.data"

// perf.data files are read by package format once this package is linked in.
func init() {
	format.Register(format.Importer{
		Kind:  Kind,
		Name:  "perf.data",
		Sniff: Sniff,
		Read: func(r io.Reader, info format.FileInfo) (*profile.Profile, error) {
			return Read(r, Options{ModTime: info.ModTime})
		},
	})
}
