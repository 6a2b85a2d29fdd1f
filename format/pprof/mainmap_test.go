package pprof

import (
	"testing"

	"github.com/gprof-dev/gprof/profile"
)

// TestMainBinaryFirst: pprof names the first mapping as the profile's
// binary ("File:" in go tool pprof), so it must be the program's, not the
// library the first sample's leaf was in (issue 18: libc.so.6).
func TestMainBinaryFirst(t *testing.T) {
	pr := &profile.Process{Pid: 5, Name: "app", End: -1, Libs: []profile.Lib{
		{Start: 0x1000, End: 0x2000, Name: "app", Path: "/bin/app"},
		{Start: 0x7000, End: 0x8000, Name: "libc.so.6", Path: "/lib/libc.so.6"},
	}}
	th := &profile.Thread{Tid: 5, Main: true, End: -1}
	uf := func(a uint64) profile.Frame { return profile.Frame{Address: a, Category: profile.CategoryUser} }
	th.Samples.Add(th.InternStack([]profile.Frame{uf(0x7010), uf(0x1100), uf(0x1010)}), 1, 1e6)
	pr.Threads = []*profile.Thread{th}
	out := Convert(&profile.Profile{Processes: []*profile.Process{pr}})
	if len(out.Mapping) != 2 || out.Mapping[0].File != "/bin/app" {
		var files []string
		for _, m := range out.Mapping {
			files = append(files, m.File)
		}
		t.Errorf("mappings %q, want /bin/app first", files)
	}
}
