package cmd

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/gprof-dev/gprof/format"
	"github.com/gprof-dev/gprof/objfile"
	"github.com/gprof-dev/gprof/symbolize"
)

// inspectSchemaVersion is the "version" of gprof inspect --json. Fields may
// be added within a version; renaming or removing one bumps it.
const inspectSchemaVersion = 1

func inspectCommand() *cli.Command {
	return &cli.Command{
		Name:      "inspect",
		Usage:     "print a binary's identity and resolve addresses in it",
		ArgsUsage: "FILE [ADDR...]",
		Description: `Prints what gprof knows a binary (ELF, Mach-O thin or fat, PE, or a PDB) by: its
debug name and path, breakpad ID (debug ID) and code ID as profiles and
symbol servers name it, its architecture and relative-address base, and
whether it has symbols, DWARF and unwind information, and which separate
debug file (split ELF debug file, .dSYM bundle) was found.

Each ADDR (hexadecimal, 0x optional) is resolved to function, file and line,
with inline frames innermost first. Addresses are relative to the image's
relative-address base, as a profile's libs and frames use them: the RVA for
PE, the offset from __TEXT's vmaddr for Mach-O, and from the first PT_LOAD's
vaddr for ELF. Use it when a profile's frames come out unnamed.

Examples:
   ./bin/gprof inspect ./bin/gprof
   ./bin/gprof inspect --json ./app.exe 1400 14a0
   ./bin/gprof inspect --arch arm64 --symbol-dir ./dsyms ./app 9f660
   ./bin/gprof inspect CppCon.pdb 0x1000 0x12ea   # a PDB on its own`,
		Flags: []cli.Flag{
			symbolDirFlag,
			&cli.StringFlag{Name: "arch", Usage: "the slice of a fat Mach-O file to read, by `NAME` (arm64, x86_64, ...; default: the host's, else the first)"},
			&cli.BoolFlag{Name: "json", Usage: "print JSON (schema version in the \"version\" field)"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() == 0 {
				return usagef("inspect needs a FILE: gprof inspect FILE [ADDR...]")
			}
			if isPDB(c.Args().First()) {
				// A PDB on its own: its identity, and image-relative
				// addresses resolved in it.
				return inspectPDBFile(c.App.Writer, c.Args().First(), c.Args().Tail())
			}
			var addrs []uint64
			for _, a := range c.Args().Slice()[1:] {
				v, err := strconv.ParseUint(strings.TrimPrefix(strings.TrimPrefix(a, "0x"), "0X"), 16, 64)
				if err != nil {
					return usagef("address %q is not hexadecimal: give it as the profile shows it, such as 0x1a2b", a)
				}
				addrs = append(addrs, v)
			}
			rep, err := inspect(c.Args().First(), c.String("arch"), c.StringSlice("symbol-dir"), addrs)
			if err != nil {
				return err
			}
			if c.Bool("json") {
				enc := json.NewEncoder(c.App.Writer)
				enc.SetIndent("", "  ")
				return enc.Encode(rep)
			}
			rep.writeText(c.App.Writer)
			return nil
		},
	}
}

// inspectReport is gprof inspect's output; its JSON form is schema
// inspectSchemaVersion, documented in docs/formats.md ("Inspect a binary").
type inspectReport struct {
	Version    int              `json:"version"`
	Path       string           `json:"path"`
	Format     string           `json:"format"`
	Arch       string           `json:"arch"`
	Arches     []string         `json:"arches,omitempty"`
	DebugName  string           `json:"debug_name"`
	DebugPath  string           `json:"debug_path"`
	BreakpadID string           `json:"breakpad_id"`
	CodeID     string           `json:"code_id"`
	BuildID    string           `json:"build_id,omitempty"`
	Base       string           `json:"base"`
	Symbols    int              `json:"symbols"`
	DWARF      bool             `json:"dwarf"`
	Unwind     []string         `json:"unwind"`
	DebugFile  string           `json:"debug_file"`
	PDB        *inspectPDB      `json:"pdb,omitempty"`
	Addresses  []inspectAddress `json:"addresses"`
}

type inspectPDB struct {
	GUID string `json:"guid"`
	Age  uint32 `json:"age"`
	Path string `json:"path"`
}

type inspectAddress struct {
	Address string         `json:"address"`
	Frames  []inspectFrame `json:"frames"`
}

// inspectFrame is one frame, outer function first as in a profile's
// symbol table; every frame but the first is inlined into the one before.
type inspectFrame struct {
	Function string `json:"function"`
	FuncAddr string `json:"func_addr,omitempty"`
	FuncSize uint64 `json:"func_size,omitempty"`
	File     string `json:"file,omitempty"`
	Line     int    `json:"line,omitempty"`
	Inlined  bool   `json:"inlined"`
}

// notObject says what path holds when it is no object file (no magic
// number objfile knows), in format's words: "a text file starting ...",
// "an empty file".
func notObject(path string) (string, bool) {
	f, err := os.Open(path)
	if err != nil {
		return "", false
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return "", false
	}
	head := make([]byte, 512)
	n, _ := io.ReadFull(f, head)
	head = head[:n]
	for _, magic := range [][]byte{[]byte("\x7fELF"), []byte("MZ"), []byte("Microsoft C/C++ MSF 7.00"),
		{0xfe, 0xed, 0xfa, 0xce}, {0xce, 0xfa, 0xed, 0xfe}, {0xfe, 0xed, 0xfa, 0xcf}, {0xcf, 0xfa, 0xed, 0xfe}, {0xca, 0xfe, 0xba, 0xbe}} {
		if bytes.HasPrefix(head, magic) {
			return "", false // an object file, damaged: objfile's error says how
		}
	}
	return format.Describe(head), true
}

func hexAddr(v uint64) string { return fmt.Sprintf("0x%x", v) }

func inspect(path, arch string, symbolDirs []string, addrs []uint64) (*inspectReport, error) {
	var objOpts []objfile.Option
	if arch != "" {
		objOpts = append(objOpts, objfile.Arch(arch))
	}
	f, err := objfile.Open(path, objOpts...)
	if err != nil {
		if found, ok := notObject(path); ok {
			return nil, fmt.Errorf("%s: expected a program, shared library or object file (ELF, Mach-O or PE) or a PDB, found %s", path, found)
		}
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	id := f.Identity()
	rep := &inspectReport{
		Version:    inspectSchemaVersion,
		Path:       path,
		Format:     id.Format.String(),
		Arch:       id.Arch,
		Arches:     f.Arches(),
		DebugName:  id.DebugName,
		DebugPath:  id.DebugPath,
		BreakpadID: id.BreakpadID,
		CodeID:     id.CodeID,
		BuildID:    hex.EncodeToString(id.BuildID),
		Base:       hexAddr(id.Base),
		DWARF:      f.HasDWARF(),
		Unwind:     f.UnwindSections(),
		Addresses:  []inspectAddress{},
	}
	if rep.Unwind == nil {
		rep.Unwind = []string{}
	}
	if info, ok := f.PDB(); ok {
		rep.PDB = &inspectPDB{GUID: hex.EncodeToString(info.GUID[:]), Age: info.Age, Path: info.Path}
	}
	if syms, err := f.Symbols(); err == nil {
		rep.Symbols = len(syms)
	}

	opts := []symbolize.Option{symbolize.SymbolDirs(symbolDirs...)}
	var s symbolize.Symbolizer
	if f.Format() == objfile.ELF {
		s, err = symbolize.Open(path, opts...)
	} else {
		s, err = symbolize.OpenObject(path, opts, objOpts...)
	}
	if err != nil {
		return nil, err
	}
	defer s.Close()
	if addrs != nil || !rep.DWARF {
		// Finding the debug file is part of the first lookup.
		rep.DebugFile = s.DebugFile()
	}
	if rep.DebugFile != "" && !rep.DWARF {
		if df, err := objfile.Open(rep.DebugFile, objfile.UUID(id.BuildID)); err == nil {
			rep.DWARF = df.HasDWARF()
			df.Close()
		} else if df, err := objfile.Open(rep.DebugFile); err == nil {
			rep.DWARF = df.HasDWARF()
			df.Close()
		}
	}
	for _, a := range addrs {
		out := inspectAddress{Address: hexAddr(a), Frames: []inspectFrame{}}
		for i, fr := range s.Lookup(a) {
			jf := inspectFrame{Function: fr.Function, FuncSize: fr.FuncSize, File: fr.File, Line: fr.Line, Inlined: i > 0}
			if fr.FuncAddr != 0 || fr.FuncSize != 0 {
				jf.FuncAddr = hexAddr(fr.FuncAddr)
			}
			out.Frames = append(out.Frames, jf)
		}
		rep.Addresses = append(rep.Addresses, out)
	}
	return rep, nil
}

func (r *inspectReport) writeText(w io.Writer) {
	orNone := func(s string) string {
		if s == "" {
			return "(none)"
		}
		return s
	}
	yesNo := func(b bool) string {
		if b {
			return "yes"
		}
		return "no"
	}
	fmt.Fprintf(w, "file:         %s\n", r.Path)
	format := r.Format
	if len(r.Arches) > 0 {
		format += " (fat: " + strings.Join(r.Arches, ", ") + ")"
	}
	fmt.Fprintf(w, "format:       %s\n", format)
	fmt.Fprintf(w, "arch:         %s\n", r.Arch)
	fmt.Fprintf(w, "debug name:   %s\n", orNone(r.DebugName))
	fmt.Fprintf(w, "debug path:   %s\n", orNone(r.DebugPath))
	fmt.Fprintf(w, "breakpad id:  %s\n", orNone(r.BreakpadID))
	fmt.Fprintf(w, "code id:      %s\n", orNone(r.CodeID))
	fmt.Fprintf(w, "base:         %s\n", r.Base)
	fmt.Fprintf(w, "symbols:      %d\n", r.Symbols)
	fmt.Fprintf(w, "dwarf:        %s\n", yesNo(r.DWARF))
	fmt.Fprintf(w, "unwind info:  %s\n", orNone(strings.Join(r.Unwind, ", ")))
	fmt.Fprintf(w, "debug file:   %s\n", orNone(r.DebugFile))
	if r.PDB != nil {
		fmt.Fprintf(w, "pdb:          %s (guid %s, age %d)\n", orNone(r.PDB.Path), r.PDB.GUID, r.PDB.Age)
	}
	for _, a := range r.Addresses {
		fmt.Fprintf(w, "\n%s\n", a.Address)
		if len(a.Frames) == 0 {
			fmt.Fprintf(w, "  ?? (no symbol covers this address)\n")
			continue
		}
		// Innermost first, as a stack reads.
		for i := len(a.Frames) - 1; i >= 0; i-- {
			fr := a.Frames[i]
			line := "  " + orNone(fr.Function)
			if fr.File != "" {
				line += fmt.Sprintf("  %s:%d", fr.File, fr.Line)
			}
			if fr.Inlined {
				line += "  (inlined)"
			}
			fmt.Fprintln(w, line)
		}
	}
}
