// Package vdso reads this process's own vdso image. Every process on a
// host maps the same vdso (the kernel has one per ABI), so gprof's copy
// describes a target's vdso, its symbols and its CFI, without reading the
// target's memory.
package vdso

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"strconv"
)

// Image returns a copy of this process's vdso image, read through
// /proc/self/maps and /proc/self/mem.
func Image() ([]byte, error) {
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Bytes()
		if !bytes.HasSuffix(line, []byte("[vdso]")) {
			continue
		}
		rng, _, _ := bytes.Cut(line, []byte(" "))
		lo, hi, ok := bytes.Cut(rng, []byte("-"))
		if !ok {
			break
		}
		start, err1 := strconv.ParseUint(string(lo), 16, 64)
		end, err2 := strconv.ParseUint(string(hi), 16, 64)
		if err1 != nil || err2 != nil || end <= start {
			break
		}
		mem, err := os.Open("/proc/self/mem")
		if err != nil {
			return nil, err
		}
		defer mem.Close()
		img := make([]byte, end-start)
		if _, err := mem.ReadAt(img, int64(start)); err != nil {
			return nil, err
		}
		return img, nil
	}
	return nil, errors.New("no [vdso] mapping in /proc/self/maps")
}
