package unwind

// evalExpr runs a DWARF expression as CFI uses it (DW_CFA_def_cfa_expression,
// DW_CFA_expression, DW_CFA_val_expression). push, when set, is pushed first
// (the CFA, for register rules). Registers are the tracked ones only; an
// expression naming any other register fails, and the frame is given up.
// The stack is a fixed array so that evaluation never allocates.
func evalExpr(a arch, e []byte, st *state, mem *memory, push uint64, hasPush bool) (uint64, bool) {
	var stk [16]uint64
	n := 0
	if hasPush {
		stk[0] = push
		n = 1
	}
	r := reader{b: e}
	for r.off < len(e) {
		op := r.u8()
		var v uint64
		pushV := true
		switch {
		case op >= 0x30 && op <= 0x4f: // lit0..lit31
			v = uint64(op - 0x30)
		case op >= 0x70 && op <= 0x8f, op == 0x92: // breg0..31, bregx
			reg := uint64(op - 0x70)
			if op == 0x92 {
				reg = r.uleb()
			}
			off := r.sleb()
			sl := a.slot(reg)
			if sl == slotNone || st.valid&(1<<sl) == 0 {
				return 0, false
			}
			v = st.r[sl] + uint64(off)
		default:
			pushV = false
			switch op {
			case 0x08: // const1u
				v, pushV = uint64(r.u8()), true
			case 0x09: // const1s
				v, pushV = uint64(int64(int8(r.u8()))), true
			case 0x0a: // const2u
				v, pushV = uint64(r.u16()), true
			case 0x0b: // const2s
				v, pushV = uint64(int64(int16(r.u16()))), true
			case 0x0c: // const4u
				v, pushV = uint64(r.u32()), true
			case 0x0d: // const4s
				v, pushV = uint64(int64(int32(r.u32()))), true
			case 0x0e, 0x0f: // const8u, const8s
				v, pushV = r.u64(), true
			case 0x10: // constu
				v, pushV = r.uleb(), true
			case 0x11: // consts
				v, pushV = uint64(r.sleb()), true
			case 0x12: // dup
				if n < 1 {
					return 0, false
				}
				v, pushV = stk[n-1], true
			case 0x13: // drop
				if n < 1 {
					return 0, false
				}
				n--
			case 0x14: // over
				if n < 2 {
					return 0, false
				}
				v, pushV = stk[n-2], true
			case 0x16: // swap
				if n < 2 {
					return 0, false
				}
				stk[n-1], stk[n-2] = stk[n-2], stk[n-1]
			case 0x06: // deref
				if n < 1 {
					return 0, false
				}
				x, ok := mem.u64(stk[n-1])
				if !ok {
					return 0, false
				}
				stk[n-1] = x
			case 0x23: // plus_uconst
				if n < 1 {
					return 0, false
				}
				stk[n-1] += r.uleb()
			case 0x1f, 0x20, 0x19: // neg, not, abs
				if n < 1 {
					return 0, false
				}
				x := stk[n-1]
				switch op {
				case 0x1f:
					x = -x
				case 0x20:
					x = ^x
				default:
					if int64(x) < 0 {
						x = -x
					}
				}
				stk[n-1] = x
			case 0x1a, 0x1c, 0x1e, 0x21, 0x22, 0x24, 0x25, 0x26, 0x27,
				0x29, 0x2a, 0x2b, 0x2c, 0x2d, 0x2e: // binary operators
				if n < 2 {
					return 0, false
				}
				x, y := stk[n-2], stk[n-1]
				n--
				var z uint64
				b2u := func(b bool) uint64 {
					if b {
						return 1
					}
					return 0
				}
				switch op {
				case 0x1a:
					z = x & y
				case 0x1c:
					z = x - y
				case 0x1e:
					z = x * y
				case 0x21:
					z = x | y
				case 0x22:
					z = x + y
				case 0x24:
					z = x << (y & 63)
				case 0x25:
					z = x >> (y & 63)
				case 0x26:
					z = uint64(int64(x) >> (y & 63))
				case 0x27:
					z = x ^ y
				case 0x29:
					z = b2u(x == y)
				case 0x2a:
					z = b2u(int64(x) >= int64(y))
				case 0x2b:
					z = b2u(int64(x) > int64(y))
				case 0x2c:
					z = b2u(int64(x) <= int64(y))
				case 0x2d:
					z = b2u(int64(x) < int64(y))
				case 0x2e:
					z = b2u(x != y)
				}
				stk[n-1] = z
			case 0x96: // nop
			default:
				// Branches, register locations and the rest do not occur in
				// CFI that compilers emit for the frames we unwind.
				return 0, false
			}
		}
		if r.bad {
			return 0, false
		}
		if pushV {
			if n == len(stk) {
				return 0, false
			}
			stk[n] = v
			n++
		}
	}
	if n == 0 {
		return 0, false
	}
	return stk[n-1], true
}
