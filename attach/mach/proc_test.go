package mach

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gprof-dev/gprof/event"
)

func TestMachSchedule(t *testing.T) {
	for _, c := range []struct {
		asked, want time.Duration
		slow        int
		notice      bool
	}{
		{0, time.Millisecond, 100, false},
		{250 * time.Microsecond, 250 * time.Microsecond, 400, false},
		{10 * time.Microsecond, machMinInterval, 1000, true},
		{time.Second, time.Second, 1, false},
	} {
		got, slow, notice := machSchedule(c.asked)
		if got != c.want || slow != c.slow || (notice != "") != c.notice {
			t.Errorf("machSchedule(%v) = %v, %d, %q", c.asked, got, slow, notice)
		}
	}
	if got := machMinRun(time.Millisecond); got != 50_000 {
		t.Errorf("minRun of 1ms = %d ns", got)
	}
}

// A command launched suspended: at its first tick dyld has not published
// its image list yet; the exec comes first, then, once dyld has, the
// images, at or after the exec; when the task goes, tick says so.
func TestMachProcLaunchOrder(t *testing.T) {
	app := darwinGo(t, "arm64", "launched")
	const aii, arr, hdr, paths = 0x1f0000000, 0x600000000, 0x100000000, 0x600002000
	task := newFakeTask(t)
	regs := event.Regs{IP: 0x100001000, SP: stackBase, FP: stackBase + 0x10}
	task.live = []*fakeThread{{id: 77, regs: regs}} // suspended: not running
	log := &eventLog{}
	s := newTestSampler(task, log)
	s.argv, s.execd = []string{"/Users/me/app"}, true
	published := false
	dyld := func() (uint64, error) {
		if !published {
			return 0, errors.New("not yet")
		}
		return aii, nil
	}
	p := newMachProc(50, s, task, dyld, func() bool { return !task.gone })
	var notices []string
	notice := func(m string) { notices = append(notices, m) }

	if !p.tick(false, notice) {
		t.Fatal("gone at the first tick")
	}
	if got := log.take(); !slices.Equal(got, []string{"comm 50 app exec=true"}) {
		t.Errorf("first tick: %q", got)
	}

	published = true
	pathPage := make([]byte, 0x1000)
	copy(pathPage, "/Users/me/app\x00")
	task.mem = append(task.mem,
		fakeRegion{aii, allImageInfos(1, arr, 0, 1)},
		fakeRegion{arr, imageInfoArray(dyldImage{hdr, paths})},
		fakeRegion{paths, pathPage},
		fakeRegion{hdr, slices.Clone(app[:0x4000])})
	task.live[0].running = true
	if !p.tick(false, notice) {
		t.Fatal("gone")
	}
	got := log.take()
	if len(got) != 2 || !strings.HasPrefix(got[0], "sample 50 ") || !strings.HasPrefix(got[1], "map 0x100000000-") {
		t.Errorf("second tick: %q", got)
	}
	if len(notices) != 0 {
		t.Errorf("notices: %q", notices)
	}

	task.gone = true
	if p.tick(false, notice) {
		t.Error("a gone task ticked on")
	}
	s.gone()
	task.checkBooks()
}

// When dyld's list is there at the first tick already, the exec is still
// reported before the images.
func TestMachProcExecBeforeImages(t *testing.T) {
	app := darwinGo(t, "arm64", "early")
	const aii, arr, hdr, paths = 0x1f0000000, 0x600000000, 0x100000000, 0x600002000
	task := newFakeTask(t)
	task.live = []*fakeThread{{id: 77}}
	pathPage := make([]byte, 0x1000)
	copy(pathPage, "/Users/me/app\x00")
	task.mem = append(task.mem,
		fakeRegion{aii, allImageInfos(1, arr, 0, 1)},
		fakeRegion{arr, imageInfoArray(dyldImage{hdr, paths})},
		fakeRegion{paths, pathPage},
		fakeRegion{hdr, slices.Clone(app[:0x4000])})
	log := &eventLog{}
	s := newTestSampler(task, log)
	s.argv, s.execd = []string{"/Users/me/app"}, true
	p := newMachProc(50, s, task, func() (uint64, error) { return aii, nil }, func() bool { return true })
	p.tick(false, func(string) {})
	got := log.take()
	if len(got) != 2 || got[0] != "comm 50 app exec=true" || !strings.HasPrefix(got[1], "map ") {
		t.Errorf("first tick: %q", got)
	}
	s.close()
	task.checkBooks()
}
