package cmd

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/gprof-dev/gprof/pdb"
	"github.com/urfave/cli/v2"
)

// inspectCommand is gprof inspect for PDB files. It is kept minimal and in
// its own file so that a fuller inspect (ELF, Mach-O, PE) can take it over
// by calling inspectPDB for .pdb files.
func inspectCommand() *cli.Command {
	return &cli.Command{
		Name:      "inspect",
		Usage:     "show a PDB's identity, or what image-relative addresses resolve to in it",
		ArgsUsage: "FILE.pdb [ADDR...]",
		Description: `Reads a Microsoft PDB (MSVC, clang-cl) and prints its breakpad ID (the GUID
and age a binary's RSDS record must carry to match it), and for each ADDR,
an address relative to the image base (an RVA, hex with or without 0x),
the function, source file and line it is in.

Examples:
   ./bin/gprof inspect CppCon.pdb
   ./bin/gprof inspect CppCon.pdb 0x1000 0x12ea`,
		Action: func(c *cli.Context) error {
			if c.NArg() < 1 {
				return usagef("give a PDB file, then addresses")
			}
			return inspectPDB(c.App.Writer, c.Args().First(), c.Args().Tail())
		},
	}
}

// inspectPDB prints path's identity and what each address resolves to.
func inspectPDB(w io.Writer, path string, addrs []string) error {
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
