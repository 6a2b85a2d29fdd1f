package view

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/arch/arm64/arm64asm"
	"golang.org/x/arch/x86/x86asm"

	"github.com/gprof-dev/gprof/profile"
)

// maxSource bounds a source file served; larger ones are not source code.
const maxSource = 16 << 20

// maxAsm bounds the bytes disassembled for one request.
const maxAsm = 1 << 20

// sourceRequest is samply's /source/v1 request, as the front-end sends it:
// the file is readable only if the debug info of that address names it,
// which is the front-end's "address proof".
type sourceRequest struct {
	DebugName    string `json:"debugName"`
	DebugID      string `json:"debugId"`
	ModuleOffset string `json:"moduleOffset"`
	File         string `json:"file"`
}

func parseHex(s string) (uint64, error) {
	if !strings.HasPrefix(s, "0x") {
		return 0, fmt.Errorf("%q is not a 0x… hex number", s)
	}
	return strconv.ParseUint(s[2:], 16, 64)
}

// source answers /source/v1.
func (s *Server) source(body []byte) (any, int, error) {
	var req sourceRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, http.StatusBadRequest, fmt.Errorf("bad /source/v1 request: %v", err)
	}
	addr, err := parseHex(req.ModuleOffset)
	if err != nil {
		return nil, http.StatusBadRequest, fmt.Errorf("bad moduleOffset: %v", err)
	}
	k := profile.LibKey{DebugName: req.DebugName, BreakpadID: req.DebugID}
	frames, _ := s.lookup(k, addr)
	named := false
	for _, f := range frames {
		if f.File != "" && f.File == req.File {
			named = true
		}
	}
	// Only files the debug info names for that very address, which is
	// also what keeps "../" and other paths out.
	if !named {
		return nil, http.StatusNotFound, fmt.Errorf("%s is not a source file of %s at %s", req.File, req.DebugName, req.ModuleOffset)
	}
	path := req.File
	if !filepath.IsAbs(path) {
		// Relative to where it was compiled, which only the binary's
		// debug info says.
		dir := s.binary(k).compDir(addr)
		if dir == "" {
			return nil, http.StatusNotFound, fmt.Errorf("%s: a relative path, and no binary of %s here to say where it was compiled", req.File, req.DebugName)
		}
		path = filepath.Join(dir, path)
	}
	text, err := readSource(path)
	if err != nil {
		return nil, http.StatusNotFound, err
	}
	return map[string]any{
		"symbolsLastModified": nil,
		"sourceLastModified":  nil,
		"file":                req.File,
		"source":              text,
	}, http.StatusOK, nil
}

// readSource reads a regular file of reasonable size.
func readSource(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("cannot read %s: %v", path, errors.Unwrap(err))
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", err
	}
	if !st.Mode().IsRegular() {
		return "", fmt.Errorf("%s is not a regular file", path)
	}
	if st.Size() > maxSource {
		return "", fmt.Errorf("%s is too large to be source code", path)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxSource))
	return string(b), err
}

// asmRequest is samply's /asm/v1 request, as the front-end sends it.
type asmRequest struct {
	DebugName                string `json:"debugName"`
	DebugID                  string `json:"debugId"`
	StartAddress             string `json:"startAddress"`
	Size                     string `json:"size"`
	ContinueUntilFunctionEnd bool   `json:"continueUntilFunctionEnd"`
}

// asm answers /asm/v1: the instructions from startAddress (lib-relative)
// for size bytes, or to the end of the function when the front-end does
// not know its size, read from the binary on this machine.
func (s *Server) asm(body []byte) (any, int, error) {
	var req asmRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, http.StatusBadRequest, fmt.Errorf("bad /asm/v1 request: %v", err)
	}
	start, err := parseHex(req.StartAddress)
	if err != nil {
		return nil, http.StatusBadRequest, fmt.Errorf("bad startAddress: %v", err)
	}
	size, err := parseHex(req.Size)
	if err != nil {
		return nil, http.StatusBadRequest, fmt.Errorf("bad size: %v", err)
	}
	k := profile.LibKey{DebugName: req.DebugName, BreakpadID: req.DebugID}
	if req.ContinueUntilFunctionEnd {
		if frames, _ := s.lookup(k, start); len(frames) > 0 && frames[0].FuncSize != 0 && frames[0].FuncAddr <= start {
			size = max(size, frames[0].FuncAddr+frames[0].FuncSize-start)
		}
	}
	size = min(size, maxAsm)
	b := s.binary(k)
	if b.b == nil {
		msg := fmt.Sprintf("no binary of %s %s on this machine", req.DebugName, req.DebugID)
		if b.err != nil {
			msg += ": " + b.err.Error()
		}
		return nil, http.StatusNotFound, errors.New(msg)
	}
	obj := b.b.Object()
	code, err := obj.ReadCode(obj.Identity().Base+start, size)
	if err != nil {
		return nil, http.StatusNotFound, fmt.Errorf("%s: %v", req.DebugName, err)
	}
	// Branch targets in the same lib-relative addresses as the listing,
	// which the front-end numbers from startAddress.
	syntax, insts, err := disassemble(obj.Identity().Arch, code, start)
	if err != nil {
		return nil, http.StatusNotImplemented, err
	}
	return map[string]any{
		"startAddress": hex(start),
		"size":         hex(uint64(len(code))),
		"arch":         obj.Identity().Arch,
		"syntax":       []string{syntax},
		"instructions": insts,
	}, http.StatusOK, nil
}

// disassemble decodes code, which sits at pc, into [offset, text] rows.
// An undecodable byte becomes a ".byte" row, so the listing goes on.
func disassemble(arch string, code []byte, pc uint64) (string, [][2]any, error) {
	var rows [][2]any
	switch arch {
	case "x86_64":
		for off := 0; off < len(code); {
			inst, err := x86asm.Decode(code[off:], 64)
			if err != nil || inst.Len == 0 {
				rows = append(rows, [2]any{off, fmt.Sprintf(".byte %#x", code[off])})
				off++
				continue
			}
			rows = append(rows, [2]any{off, x86asm.IntelSyntax(inst, pc+uint64(off), nil)})
			off += inst.Len
		}
		return "Intel", rows, nil
	case "aarch64", "arm64":
		for off := 0; off+4 <= len(code); off += 4 {
			inst, err := arm64asm.Decode(code[off:])
			if err != nil {
				rows = append(rows, [2]any{off, fmt.Sprintf(".inst %#08x", uint32(code[off])|uint32(code[off+1])<<8|uint32(code[off+2])<<16|uint32(code[off+3])<<24)})
				continue
			}
			rows = append(rows, [2]any{off, arm64asm.GNUSyntax(inst)})
		}
		return "ARM", rows, nil
	}
	return "", nil, fmt.Errorf("no disassembler for %s: only x86_64 and aarch64", arch)
}
