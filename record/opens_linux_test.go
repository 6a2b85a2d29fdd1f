package record

import (
	"bufio"
	"context"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/gprof-dev/gprof/attach"
	"github.com/gprof-dev/gprof/event"
)

//go:noinline
func opensLeaf(n int) int { return n*3 + 1 }

// TestRecordingOpensEachBinaryOnce: in one recording, the recorder opens
// a binary once, when it is mapped, and symbolize reads the file it
// opened: nothing opens it again. The kernel reports the opens (inotify's
// IN_OPEN), whoever makes them, also through another path (a map_files or
// /proc/self/fd link). inotify merges an event into an identical one
// still queued, so reads and closes are watched too: they come between
// two opens of a file that is read after it is opened. The binary is a
// copy of this test's own executable, mapped where the running one is,
// and sampled in opensLeaf, which must be named from it.
func TestRecordingOpensEachBinaryOnce(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	maps := execMappings(t, self)
	if len(maps) == 0 {
		t.Skip("this test's executable shows no executable mapping in /proc/self/maps")
	}
	opensLeaf(1)
	leaf := uint64(reflect.ValueOf(opensLeaf).Pointer())
	// deleted: the binary is deleted while the recording goes on, as a
	// build directory's may be once its program ran.
	for _, deleted := range []bool{false, true} {
		t.Run(map[bool]string{false: "present", true: "deleted"}[deleted], func(t *testing.T) {
			bin := filepath.Join(t.TempDir(), "prog")
			copyFile(t, self, bin)
			in, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
			if err != nil {
				t.Skipf("inotify: %v", err)
			}
			defer unix.Close(in)
			if _, err := unix.InotifyAddWatch(in, bin, unix.IN_OPEN|unix.IN_ACCESS|unix.IN_CLOSE_NOWRITE); err != nil {
				t.Skipf("inotify watch: %v", err)
			}

			const pid = 7
			old := backendRecord
			t.Cleanup(func() { backendRecord = old })
			backendRecord = func(ctx context.Context, o attach.Options, h event.Handler) (attach.Result, error) {
				t0 := event.Now()
				h(&event.Comm{Time: t0, Pid: pid, Tid: pid, Name: "prog"})
				for _, m := range maps {
					h(&event.Map{Time: t0, Pid: pid, Start: m.start, End: m.end, FileOffset: m.off, Path: bin})
				}
				if deleted {
					if err := os.Remove(bin); err != nil {
						return attach.Result{}, err
					}
				}
				for i := int64(1); i <= 3; i++ {
					h(sample(t0+i*ms, pid, pid, leaf+1))
				}
				return attach.Result{ExitCode: -1}, nil
			}
			res, err := Run(context.Background(), Options{Attach: attach.Options{Pids: []int{pid}}, Symbolize: true,
				SymbolDirs: []string{t.TempDir()}, NoCounters: true, NoPython: true})
			if err != nil {
				t.Fatal(err)
			}

			if got, want := leafName(t, res), runtime.FuncForPC(uintptr(leaf)).Name(); got != want {
				t.Errorf("the sampled function is named %q, want %q", got, want)
			}
			if n := inotifyOpens(t, in); n != 1 {
				t.Errorf("the binary was opened %d times in one recording, want once", n)
			}
		})
	}
}

// leafName is the function name of the one leaf frame res's samples have.
func leafName(t *testing.T, res *Result) string {
	t.Helper()
	p := res.Profile
	for _, pr := range p.Processes {
		for _, th := range pr.Threads {
			for _, f := range th.Frames.Frames {
				key, rel, ok := pr.Locate(f)
				if !ok {
					continue
				}
				if fr := p.Symbols.LookupFrame(key, rel, false); len(fr) > 0 {
					return fr[0].Function
				}
				return ""
			}
		}
	}
	t.Fatal("no frame in the profile")
	return ""
}

// inotifyOpens counts the IN_OPEN events queued on in, among others.
func inotifyOpens(t *testing.T, in int) int {
	t.Helper()
	n := 0
	buf := make([]byte, 64<<10)
	for {
		r, err := unix.Read(in, buf)
		if err == unix.EAGAIN {
			return n
		}
		if err != nil {
			t.Fatalf("read inotify events: %v", err)
		}
		for off := 0; off+unix.SizeofInotifyEvent <= r; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			if ev.Mask&unix.IN_OPEN != 0 {
				n++
			}
			off += unix.SizeofInotifyEvent + int(ev.Len)
		}
	}
}

type procMapping struct{ start, end, off uint64 }

// execMappings lists the executable mappings of path in this process.
func execMappings(t *testing.T, path string) []procMapping {
	t.Helper()
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		t.Skip(err)
	}
	defer f.Close()
	var out []procMapping
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// start-end perms offset dev inode path
		fs := strings.Fields(sc.Text())
		if len(fs) < 6 || fs[5] != path || !strings.Contains(fs[1], "x") {
			continue
		}
		se := strings.SplitN(fs[0], "-", 2)
		start, err1 := strconv.ParseUint(se[0], 16, 64)
		end, err2 := strconv.ParseUint(se[1], 16, 64)
		off, err3 := strconv.ParseUint(fs[2], 16, 64)
		if err1 != nil || err2 != nil || err3 != nil {
			t.Fatalf("/proc/self/maps line %q", sc.Text())
		}
		out = append(out, procMapping{start, end, off})
	}
	return out
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	src, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.Create(to)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
}
