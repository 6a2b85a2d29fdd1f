package profile

import "testing"

// Exec images share their OS process's pid, and only the last image's main
// thread keeps the real tid; a reused pid is told apart; every tid is
// different.
func TestTrackIDs(t *testing.T) {
	th := func(tid int, main bool, name string) *Thread { return &Thread{Tid: tid, Main: main, Name: name} }
	sh := &Process{Pid: 7, Name: "sh", Threads: []*Thread{th(7, true, "sh")}}
	perl := &Process{Pid: 7, Name: "perl", Exec: true, Threads: []*Thread{th(7, true, "perl"), th(8, false, "")}}
	reused := &Process{Pid: 7, Name: "xz", Threads: []*Thread{th(7, true, "xz")}}
	again := &Process{Pid: 7, Name: "xz", Exec: true, Threads: []*Thread{th(7, true, "xz")}}
	p := &Profile{Processes: []*Process{sh, perl, reused, again}}

	if n := p.ProcessCount(); n != 2 {
		t.Errorf("ProcessCount %d, want 2", n)
	}
	ids := NewTrackIDs(p)
	first, second := ids.Process(sh), ids.Process(reused)
	if first != ids.Process(perl) || first.Pid != "7" || first.Name != "sh → perl" || first.Main != perl.Threads[0] {
		t.Errorf("first process %+v", first)
	}
	if second != ids.Process(again) || second.Pid != "7.1" || second.Name != "xz" || second.Main != again.Threads[0] {
		t.Errorf("second process %+v", second)
	}
	for _, c := range []struct {
		pr       *Process
		th       *Thread
		tid      string
		name     string
		isNumber bool
	}{
		{sh, sh.Threads[0], "7.2", "sh", false},
		{perl, perl.Threads[0], "7", "GeckoMain", true},
		{perl, perl.Threads[1], "8", "Thread 8", true},
		{reused, reused.Threads[0], "7.3", "xz", false},
		{again, again.Threads[0], "7.1", "GeckoMain", false},
	} {
		if got := ids.Tid(c.th); got != c.tid || IsNumber(got) != c.isNumber {
			t.Errorf("%s/%s: tid %q, want %q", c.pr.Name, c.th.Name, got, c.tid)
		}
		if got := ids.ThreadName(c.pr, c.th); got != c.name {
			t.Errorf("%s/%s: name %q, want %q", c.pr.Name, c.th.Name, got, c.name)
		}
	}
}
