//go:build linux

package procmaps

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/gprof-dev/gprof/attach/internal/proc"
	"github.com/gprof-dev/gprof/event"
)

// Read returns the executable mappings of pid as Map events.
func Read(pid int, t int64) ([]*event.Map, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var maps []*event.Map
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if m := ParseLine(sc.Text(), pid, t); m != nil {
			maps = append(maps, m)
		}
	}
	return maps, sc.Err()
}

// ParseLine parses "start-end perms offset maj:min inode   path".
func ParseLine(line string, pid int, t int64) *event.Map {
	fields := strings.Fields(line)
	if len(fields) < 5 || !strings.Contains(fields[1], "x") {
		return nil
	}
	lo, hi, ok := strings.Cut(fields[0], "-")
	if !ok {
		return nil
	}
	start, err1 := strconv.ParseUint(lo, 16, 64)
	end, err2 := strconv.ParseUint(hi, 16, 64)
	off, err3 := strconv.ParseUint(fields[2], 16, 64)
	maj, min, _ := strings.Cut(fields[3], ":")
	dmaj, err4 := strconv.ParseUint(maj, 16, 32)
	dmin, err5 := strconv.ParseUint(min, 16, 32)
	ino, err6 := strconv.ParseUint(fields[4], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil || err4 != nil || err5 != nil || err6 != nil {
		return nil
	}
	path := ""
	if len(fields) > 5 {
		// The path is the rest of the line after the inode column; it may
		// contain spaces.
		idx := 0
		for i := 0; i < 5; i++ {
			idx += strings.Index(line[idx:], fields[i]) + len(fields[i])
		}
		path = strings.TrimLeft(line[idx:], " \t")
	}
	m := &event.Map{
		Time:       t,
		Pid:        pid,
		Start:      start,
		End:        end,
		FileOffset: off,
		Path:       path,
		Dev:        unix.Mkdev(uint32(dmaj), uint32(dmin)),
		Inode:      ino,
	}
	if ino != 0 {
		m.MapFile = proc.MapFilePath(pid, start, end)
	}
	return m
}

// Key identifies a mapping already reported.
type Key struct {
	start, end, off, dev, ino uint64
	path                      string
}

// KeyOf is the key of m.
func KeyOf(m *event.Map) Key {
	return Key{m.Start, m.End, m.FileOffset, m.Dev, m.Inode, m.Path}
}
