package record

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/gprof-dev/gprof/objfile"
	"github.com/gprof-dev/gprof/profile"
)

// kernelLib describes the running kernel as a library covering every
// address in /proc/kallsyms (core and modules), so kernel frames resolve
// like any other. Relative addresses count from _stext, which is where a
// vmlinux's first loadable segment starts.
func kernelLib() (profile.Lib, bool) {
	f, err := os.Open("/proc/kallsyms")
	if err != nil {
		return profile.Lib{}, false
	}
	defer f.Close()
	var stext, lo, hi uint64
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 3 {
			continue
		}
		a, err := strconv.ParseUint(fields[0], 16, 64)
		if err != nil || a == 0 {
			continue // zeroed: not permitted to see kernel addresses
		}
		if fields[2] == "_stext" {
			stext = a
		}
		if lo == 0 || a < lo {
			lo = a
		}
		if a > hi {
			hi = a
		}
	}
	if stext == 0 || hi == 0 {
		return profile.Lib{}, false
	}
	if lo < stext {
		lo = stext
	}
	l := profile.Lib{
		Start: lo, End: hi + 4096, Offset: lo - stext,
		Name: kernelLibName, Path: kernelLibName, DebugName: kernelLibName, DebugPath: kernelLibName,
		BreakpadID: zeroBreakpadID, Arch: archName(),
	}
	if notes, err := os.ReadFile("/sys/kernel/notes"); err == nil {
		if bid := objfile.BuildIDFromNotes(notes, binary.LittleEndian, 4); len(bid) > 0 {
			l.BreakpadID = objfile.BreakpadID(bid, true)
			l.CodeID = fmt.Sprintf("%x", bid)
		}
	}
	return l, true
}
