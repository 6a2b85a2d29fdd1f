package cmd

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/gprof-dev/gprof/pdb"
)

// inspectPDBFile prints a PDB file's (path's)'s identity and what each address resolves to.
func inspectPDBFile(w io.Writer, path string, addrs []string) error {
	rvas := make([]uint32, len(addrs))
	for i, a := range addrs {
		v, err := strconv.ParseUint(strings.TrimPrefix(strings.ToLower(a), "0x"), 16, 32)
		if err != nil {
			return usagef("invalid address %q: give an image-relative address in hex", a)
		}
		rvas[i] = uint32(v)
	}
	f, err := pdb.Open(path)
	if err != nil {
		return fmt.Errorf("cannot read PDB %v", err)
	}
	if len(addrs) == 0 {
		fmt.Fprintf(w, "breakpad id: %s\nsections: %d\npublic symbols: %d\nfunctions: %d\nline entries: %d\n",
			f.BreakpadID(), len(f.Sections), len(f.Publics), len(f.Funcs), len(f.Lines()))
		return nil
	}
	for i, rva := range rvas {
		s, ok := f.Lookup(rva)
		if !ok {
			fmt.Fprintf(w, "%s\t??\n", addrs[i])
			continue
		}
		line := fmt.Sprintf("%s\t%s+%#x", addrs[i], s.Name, rva-s.RVA)
		if s.File != "" {
			line += fmt.Sprintf("\t%s:%d", s.File, s.Line)
		}
		// The linker's names for the same code: functions folded into
		// this one, and the decorated public names.
		var also []string
		if len(s.Folded) > 0 {
			also = append(also, "folded: "+strings.Join(s.Folded, ", "))
		}
		if len(s.Publics) > 0 {
			also = append(also, "public: "+strings.Join(s.Publics, ", "))
		}
		if len(also) > 0 {
			line += "\t[" + strings.Join(also, "; ") + "]"
		}
		fmt.Fprintln(w, line)
	}
	return nil
}

// isPDB reports whether path is a PDB (an MSF 7.0 container) by its magic.
func isPDB(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	head := make([]byte, len(msfMagic))
	_, err = io.ReadFull(f, head)
	return err == nil && string(head) == msfMagic
}

const msfMagic = "Microsoft C/C++ MSF 7.00\r\n\x1aDS\x00\x00\x00"
