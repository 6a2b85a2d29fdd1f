package perfrecord

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
)

// A format as tracefs writes it (events/syscalls/sys_enter_openat/format
// on Linux 6.18), and one with strings (sched/sched_switch).
const openatFormat = `name: sys_enter_openat
ID: 782
format:
	field:unsigned short common_type;	offset:0;	size:2;	signed:0;
	field:unsigned char common_flags;	offset:2;	size:1;	signed:0;
	field:unsigned char common_preempt_count;	offset:3;	size:1;	signed:0;
	field:int common_pid;	offset:4;	size:4;	signed:1;

	field:int __syscall_nr;	offset:8;	size:4;	signed:1;
	field:int dfd;	offset:16;	size:8;	signed:0;
	field:const char * filename;	offset:24;	size:8;	signed:0;
	field:int flags;	offset:32;	size:8;	signed:0;
	field:umode_t mode;	offset:40;	size:8;	signed:0;

print fmt: "dfd: 0x%08lx, filename: 0x%08lx, flags: 0x%08lx, mode: 0x%08lx", ((unsigned long)(REC->dfd)), ((unsigned long)(REC->filename)), ((unsigned long)(REC->flags)), ((unsigned long)(REC->mode))
`

const execFormat = `name: sched_process_exec
ID: 365
format:
	field:unsigned short common_type;	offset:0;	size:2;	signed:0;
	field:unsigned char common_flags;	offset:2;	size:1;	signed:0;
	field:unsigned char common_preempt_count;	offset:3;	size:1;	signed:0;
	field:int common_pid;	offset:4;	size:4;	signed:1;

	field:__data_loc char[] filename;	offset:8;	size:4;	signed:0;
	field:pid_t pid;	offset:12;	size:4;	signed:1;
	field:char comm[16];	offset:16;	size:16;	signed:0;

print fmt: "filename=%s pid=%d comm=%s", __get_str(filename), REC->pid, REC->comm
`

func TestTraceFormat(t *testing.T) {
	f, err := ParseTraceFormat([]byte(openatFormat))
	if err != nil {
		t.Fatal(err)
	}
	if f.Name != "sys_enter_openat" || f.ID != 782 || len(f.Fields) != 5 {
		t.Fatalf("format %+v", f)
	}
	raw := make([]byte, 48)
	le := binary.LittleEndian
	le.PutUint32(raw[8:], 257)
	le.PutUint64(raw[16:], 0xffffff9c)
	le.PutUint64(raw[24:], 0x7fff1234)
	le.PutUint64(raw[32:], 0x80000)
	got := string(f.AppendFields(nil, raw, false))
	if want := "__syscall_nr=257 dfd=0xffffff9c filename=0x7fff1234 flags=0x80000 mode=0x0"; got != want {
		t.Errorf("fields %q\nwant   %q", got, want)
	}

	e, err := ParseTraceFormat([]byte(execFormat))
	if err != nil {
		t.Fatal(err)
	}
	raw = make([]byte, 40)
	le.PutUint32(raw[8:], 7<<16|32)    // 7 bytes at 32
	le.PutUint32(raw[12:], 0xfffffffb) // -5
	copy(raw[16:], "sh\x00")
	copy(raw[32:], "/bin/s\x00")
	if got, want := string(e.AppendFields(nil, raw, false)), "filename=/bin/s pid=-5 comm=sh"; got != want {
		t.Errorf("fields %q, want %q", got, want)
	}
	// Fields past the raw data are left out; nothing reads past it.
	if got := string(e.AppendFields(nil, raw[:14], false)); got != "pid=" && got != "" && got != "filename=" {
		t.Logf("short raw data: %q", got)
	}
}

func TestMarkerFile(t *testing.T) {
	for path, want := range map[string]bool{"/tmp/marker-12.txt\x00": true, "marker-1-2.txt": true, "/x/marker-12.txt.bak": false, "/x/jit-1.dump": false, "": false} {
		if MarkerFile([]byte(path)) != want {
			t.Errorf("MarkerFile(%q) = %v", path, !want)
		}
	}
}

func FuzzTraceFormat(f *testing.F) {
	f.Add([]byte(openatFormat), make([]byte, 48))
	f.Add([]byte(execFormat), make([]byte, 40))
	if b, err := os.ReadFile(filepath.Join("testdata", "sched_switch.format")); err == nil {
		f.Add(b, make([]byte, 64))
	}
	f.Fuzz(func(t *testing.T, text, raw []byte) {
		tf, err := ParseTraceFormat(text)
		if err != nil {
			return
		}
		tf.AppendFields(nil, raw, false)
		tf.AppendFields(nil, raw, true)
	})
}
