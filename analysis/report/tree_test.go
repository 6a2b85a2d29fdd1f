package report

import (
	"bytes"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/gprof-dev/gprof/profile"
)

func TestCollapsed(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteCollapsed(&buf, BuildTree(testProfile())); err != nil {
		t.Fatal(err)
	}
	// Recursion stays a path (rec;rec), an inlined callee its own level
	// (outer;inl), and unnamed addresses keep their lib+offset.
	want := `app;main;hot 5
app;main;outer;inl 3
app;main;rec;rec;rec 2
worker;0x5 4
worker;app+0x900 4
worker;idle 2
`
	if got := buf.String(); got != want {
		t.Errorf("collapsed:\n%s\nwant:\n%s", got, want)
	}
}

func TestCollapsedSumsAndEscapes(t *testing.T) {
	p := testProfile()
	th := p.Processes[0].Threads[1]
	th.Name = "evil\x1b[31m;name\n"
	s := th.InternStack([]profile.Frame{{Label: "a;b c"}})
	th.Samples.Add(s, 20e6, -1)
	th.Samples.Add(s, 21e6, -1)
	var buf bytes.Buffer
	tree := BuildTree(p)
	WriteCollapsed(&buf, tree)
	var sum int
	for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		i := strings.LastIndexByte(l, ' ')
		var n int
		for _, c := range l[i+1:] {
			n = n*10 + int(c-'0')
		}
		sum += n
		if strings.ContainsAny(l[:i], "\x1b\n") || strings.Count(l, ";") != strings.Count(l[:i], ";") {
			t.Errorf("line not escaped: %q", l)
		}
	}
	if sum != 22 || tree.Samples != 22 {
		t.Errorf("collapsed sums to %d, tree %d, want 22", sum, tree.Samples)
	}
	if !strings.Contains(buf.String(), `evil\x1b[31m:name\n;a:b c 2`) {
		t.Errorf("escaped line missing:\n%s", buf.String())
	}
}

func TestTree(t *testing.T) {
	var buf bytes.Buffer
	WriteTree(&buf, BuildTree(testProfile()), TreeOptions{Depth: 2})
	want := `   total     self  function
  50.00%    0.00%  app
  50.00%    0.00%    main  [app]
  25.00%   25.00%      hot  [app]
  15.00%    0.00%      outer  [app]
                         …
  10.00%    0.00%      rec  [app]
                         …
  50.00%    0.00%  worker
  20.00%   20.00%    0x5
  20.00%   20.00%    app+0x900  [app]
  10.00%   10.00%    idle
`
	if got := buf.String(); got != want {
		t.Errorf("tree:\n%s\nwant:\n%s", got, want)
	}
	buf.Reset()
	WriteTree(&buf, BuildTree(testProfile()), TreeOptions{MinPct: 20, Width: 24})
	want = `   total     self  func…
  50.00%    0.00%  app
  50.00%    0.00%    ma…
  25.00%   25.00%      …
  50.00%    0.00%  work…
  20.00%   20.00%    0x5
  20.00%   20.00%    ap…
`
	if got := buf.String(); got != want {
		t.Errorf("tree with --min-pct and width:\n%s\nwant:\n%s", got, want)
	}
}

func TestFilter(t *testing.T) {
	p := testProfile()
	for _, c := range []struct {
		f    Filter
		want string
	}{
		{Filter{}, "10,11"},
		{Filter{Tids: []int{11}}, "11"},
		{Filter{Threads: []string{"wor*"}}, "11"},
		{Filter{Pids: []int{10}, Threads: []string{"app"}}, "10"},
		{Filter{Pids: []int{99}}, ""},
		{Filter{Processes: []string{"app"}, Tids: []int{10, 11}}, "10,11"},
		{Filter{Processes: []string{"other"}}, ""},
	} {
		var got []string
		for _, pr := range c.f.Apply(p).Processes {
			for _, th := range pr.Threads {
				got = append(got, strconv.Itoa(th.Tid))
			}
		}
		if g := strings.Join(got, ","); g != c.want {
			t.Errorf("%+v: threads %s, want %s", c.f, g, c.want)
		}
	}
	if len(p.Processes[0].Threads) != 2 {
		t.Error("Apply changed its input")
	}
}

func TestThreadsSortedAndProcessTotals(t *testing.T) {
	p := testProfile()
	p.Processes[0].Threads[1].Samples.Add(-1, 30e6, -1) // worker now has 11
	r := Build(p, Options{})
	if r.Threads[0].Tid != 11 || r.Threads[1].Tid != 10 {
		t.Errorf("threads not by samples: %d, %d", r.Threads[0].Tid, r.Threads[1].Tid)
	}
	if len(r.ProcessTotals) != 1 || !reflect.DeepEqual(r.ProcessTotals[0], ProcessTotal{Pid: 10, Name: "app", Threads: 2, Samples: 21, CPU: 10e6 + 11*2e6, PctOfAll: 100}) {
		t.Errorf("process totals %+v", r.ProcessTotals)
	}
}
