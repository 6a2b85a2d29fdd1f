package unwind

import (
	"bytes"
	"encoding/binary"
	"os"
	"testing"

	"github.com/go-delve/delve/pkg/dwarf/frame"
	"github.com/gprof-dev/gprof/internal/vdso"
	"github.com/gprof-dev/gprof/objfile"
)

// systemBinaries are Debian binaries built without frame pointers; each
// one present is checked.
var systemBinaries = []string{
	"/lib/x86_64-linux-gnu/libc.so.6",
	"/lib64/ld-linux-x86-64.so.2",
	"/lib/x86_64-linux-gnu/libm.so.6",
	"/lib/x86_64-linux-gnu/libstdc++.so.6",
	"/usr/bin/xz",
	"/usr/bin/perl",
	"/usr/bin/python3",
	"/usr/bin/sqlite3",
	"/usr/bin/gdb",
}

// TestCFIAgainstDelve compares the rules we compile with the rows delve's
// independent CFI interpreter produces, at many PCs of every FDE.
func TestCFIAgainstDelve(t *testing.T) {
	files := append([]string(nil), systemBinaries...)
	n := 0
	for _, path := range files {
		if _, err := os.Stat(path); err != nil {
			continue
		}
		if testing.Short() && n > 0 {
			break // libc alone in short mode
		}
		n++
		t.Run(path, func(t *testing.T) { compareWithDelve(t, path) })
	}
	if n == 0 {
		t.Skip("no system binaries")
	}
	t.Run("vdso", func(t *testing.T) {
		img, err := vdso.Image()
		if err != nil {
			t.Skip(err)
		}
		m, err := loadModule("[vdso]", img)
		if err != nil {
			t.Fatal(err)
		}
		compareModule(t, m, img)
	})
}

func compareWithDelve(t *testing.T, path string) {
	m, err := openModule(path)
	if err != nil {
		t.Fatal(err)
	}
	defer m.close()
	compareModule(t, m, m.image)
}

func compareModule(t *testing.T, m *module, image []byte) {
	f, err := objfile.NewFile(bytes.NewReader(image), m.name)
	if err != nil {
		t.Fatal(err)
	}
	var fdes frame.FrameDescriptionEntries
	if s := f.Section(".eh_frame"); s != nil {
		data, _ := s.Data()
		fdes, err = frame.Parse(data, binary.LittleEndian, 0, 8, s.Addr)
		if err != nil {
			t.Fatalf("delve: %v", err)
		}
	}
	if s := f.Section(".debug_frame"); s != nil && s.InFile() {
		data, _ := s.Data()
		more, err := frame.Parse(data, binary.LittleEndian, 0, 8, 0)
		if err == nil {
			fdes = fdes.Append(more)
		}
	}
	fdes = frame.FrameDescriptionEntries(nil).Append(fdes)
	if len(fdes) == 0 {
		t.Skip("no CFI")
	}
	checked, mismatches := 0, 0
	for _, fd := range fdes {
		step := (fd.End() - fd.Begin()) / 48
		if step == 0 {
			step = 1
		}
		for pc := fd.Begin(); pc < fd.End(); pc += step {
			want, err := fd.EstablishFrame(pc)
			if err != nil {
				continue
			}
			var got rule
			m.rule(pc, true, &got)
			checked++
			if msg := diffRule(m, &got, want); msg != "" {
				mismatches++
				if mismatches <= 10 {
					t.Errorf("pc %#x (fde %#x-%#x): %s", pc, fd.Begin(), fd.End(), msg)
				}
			}
		}
	}
	t.Logf("%d FDEs, %d PCs checked, %d mismatches", len(fdes), checked, mismatches)
}

func diffRule(m *module, got *rule, want *frame.FrameContext) string {
	if got.flags&(flagNoCFI|flagBad) != 0 {
		return "no rule compiled"
	}
	sec := &m.eh
	if got.flags&flagDebug != 0 {
		sec = &m.dbg
	}
	switch want.CFA.Rule {
	case frame.RuleCFA:
		if got.cfa.kind != ruleReg || got.cfa.reg != m.arch.slot(want.CFA.Reg) || int64(got.cfa.off) != want.CFA.Offset {
			return "CFA differs"
		}
	case frame.RuleExpression:
		switch got.cfa.kind {
		case rulePLT:
		case ruleExpr:
			if !bytes.Equal(sec.expr(got.cfa), want.CFA.Expression) {
				return "CFA expression differs"
			}
		default:
			return "CFA kind differs"
		}
	}
	if msg := diffReg(sec, got.ra, want.Regs[want.RetAddrReg], "RA"); msg != "" {
		return msg
	}
	fpReg := uint64(6)
	if m.arch == archARM64 {
		fpReg = 29
	}
	if msg := diffReg(sec, got.fp, want.Regs[fpReg], "FP"); msg != "" || m.arch != archAMD64 {
		return msg
	}
	return diffReg(sec, got.bx, want.Regs[3], "RBX")
}

func diffReg(sec *cfiSection, got regRule, want frame.DWRule, name string) string {
	switch want.Rule {
	case frame.RuleUndefined:
		// delve's zero value also means "no rule"
		if got.kind != ruleUnset && got.kind != ruleUndef {
			return name + ": want undefined/unset"
		}
	case frame.RuleSameVal:
		if got.kind != ruleSame && got.kind != ruleUnset {
			return name + ": want same value"
		}
	case frame.RuleOffset:
		if got.kind != ruleOffset || int64(got.off) != want.Offset {
			return name + ": offset differs"
		}
	case frame.RuleValOffset:
		if got.kind != ruleValOff || int64(got.off) != want.Offset {
			return name + ": val offset differs"
		}
	case frame.RuleExpression, frame.RuleValExpression:
		if (got.kind != ruleExpr && got.kind != ruleValExpr) || !bytes.Equal(sec.expr(got), want.Expression) {
			return name + ": expression differs"
		}
	}
	return ""
}

// TestTruncatedExpression checks that a CFA expression running past the
// end of its FDE (and of the section) is rejected rather than compiled into
// a rule that slices beyond the data.
func TestTruncatedExpression(t *testing.T) {
	const addr = 0x1000
	cieBody := []byte{
		0, 0, 0, 0, // CIE id
		1,           // version
		'z', 'R', 0, // augmentation
		1,          // code alignment
		0x78,       // data alignment -8
		16,         // return address register
		1,          // augmentation length
		0x1b,       // FDE encoding: pcrel|sdata4
		0x0c, 7, 8, // def_cfa rsp+8
		0x90, 1, // rip at cfa-8
	}
	var data []byte
	data = binary.LittleEndian.AppendUint32(data, uint32(len(cieBody)))
	data = append(data, cieBody...)
	fdeOff := len(data)
	fdeBody := binary.LittleEndian.AppendUint32(nil, uint32(fdeOff+4)) // CIE pointer
	// pc begin, pcrel: the function starts at addr+0x100.
	pcAt := addr + fdeOff + 4 + len(fdeBody)
	fdeBody = binary.LittleEndian.AppendUint32(fdeBody, uint32(addr+0x100-pcAt))
	fdeBody = binary.LittleEndian.AppendUint32(fdeBody, 0x40) // pc range
	fdeBody = append(fdeBody, 0)                              // augmentation length
	fdeBody = append(fdeBody, 0x0f, 0x7f, 0x77, 0x08)         // def_cfa_expression of 127 bytes, 2 present
	data = binary.LittleEndian.AppendUint32(data, uint32(len(fdeBody)))
	data = append(data, fdeBody...)
	data = data[:len(data):len(data)]

	s := cfiSection{data: data, addr: addr, eh: true}
	s.buildIndex()
	var f fde
	if !s.find(addr+0x110, &f) {
		t.Fatal("FDE not found")
	}
	var r rule
	if s.evalRow(archAMD64, &f, addr+0x110, &r) {
		t.Errorf("truncated expression compiled: %+v", r)
	}
}
