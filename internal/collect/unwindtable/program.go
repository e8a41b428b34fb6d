package unwindtable

import (
	"bytes"
	"fmt"
)

// ruleKind is how a register of the caller is recovered (DWARF 5 §6.4.1).
type ruleKind uint8

const (
	ruleUnset     ruleKind = iota // no rule: the register keeps its value (on arm64 the RA then is LR)
	ruleUndefined                 // DW_CFA_undefined: not recoverable (outermost frame for the RA)
	ruleSame                      // DW_CFA_same_value
	ruleOffset                    // saved at CFA+off
	ruleValOffset                 // value is CFA+off
	ruleRegister                  // value is in register reg
	ruleExpr                      // saved at the address expr computes
	ruleValExpr                   // value is what expr computes
)

type regRule struct {
	kind ruleKind
	off  int64
	reg  uint64
	expr []byte
}

type cfaRule struct {
	reg  uint64
	off  int64
	expr []byte // non-nil: DW_CFA_def_cfa_expression; reg and off unused
}

// frameState is the part of a CFA table row sonde needs: the CFA, and the rules
// of the registers the walker recovers (return address, frame pointer, stack pointer).
type frameState struct {
	cfa      cfaRule
	ra, fp   regRule
	sp       regRule
	raSigned bool // AArch64 DW_CFA_AARCH64_negate_ra_state toggled: the saved RA carries a PAC
}

func (a *frameState) equal(b *frameState) bool {
	return a.cfa.reg == b.cfa.reg && a.cfa.off == b.cfa.off && bytes.Equal(a.cfa.expr, b.cfa.expr) &&
		a.ra.equal(&b.ra) && a.fp.equal(&b.fp) && a.sp.equal(&b.sp) && a.raSigned == b.raSigned
}

func (a *regRule) equal(b *regRule) bool {
	return a.kind == b.kind && a.off == b.off && a.reg == b.reg && bytes.Equal(a.expr, b.expr)
}

// stateRow is one row of an FDE's CFA table: the state from pc on.
type stateRow struct {
	pc uint64
	st frameState
}

// regs names the DWARF register numbers of one architecture.
type regs struct {
	sp, fp, ra uint64
}

// maxStateStack bounds DW_CFA_remember_state nesting so corrupt input cannot
// grow memory without limit; compilers nest one or two levels.
const maxStateStack = 64

// run executes the CIE's initial instructions and the FDE's program and returns
// the rows of its CFA table, in pc order, each starting where the previous ends.
// The rows are appended to scratch[:0], so a caller looping over FDEs reuses one
// buffer.
func run(f *FDE, sec *Section, ar regs, scratch []stateRow) ([]stateRow, error) {
	c := f.CIE
	var init frameState
	if err := execute(c.Initial, c, sec, c.initialOff, ar, &init, nil, nil, f.Begin, f.End); err != nil {
		return nil, fmt.Errorf("CIE initial instructions: %w", err)
	}
	st := init
	rows := scratch[:0]
	if err := execute(f.Instructions, c, sec, f.instOff, ar, &st, &init, &rows, f.Begin, f.End); err != nil {
		return rows, err
	}
	return rows, nil
}

// execute interprets CFA instructions found at section offset progOff. With
// rows == nil (the CIE's initial instructions) advancing the location is an
// error. Rows are appended as the location advances and once at the end.
func execute(prog []byte, c *CIE, sec *Section, progOff uint64, ar regs, st, init *frameState, rows *[]stateRow, begin, end uint64) error {
	r := &buf{b: prog, order: sec.Order}
	loc := begin
	var stack []frameState
	emit := func(next uint64) error {
		if rows == nil {
			return fmt.Errorf("location advance in CIE")
		}
		if next < loc {
			return fmt.Errorf("location moves backwards to %#x", next)
		}
		if next > loc {
			*rows = append(*rows, stateRow{pc: loc, st: *st})
			loc = next
		}
		return nil
	}
	setReg := func(reg uint64, rule regRule) {
		switch reg {
		case ar.ra:
			st.ra = rule
		case ar.fp:
			st.fp = rule
		case ar.sp:
			st.sp = rule
		}
	}
	restore := func(reg uint64) error {
		if init == nil {
			return fmt.Errorf("DW_CFA_restore in CIE")
		}
		switch reg {
		case ar.ra:
			st.ra = init.ra
		case ar.fp:
			st.fp = init.fp
		case ar.sp:
			st.sp = init.sp
		}
		return nil
	}
	daf := c.DataAlign
	caf := c.CodeAlign
	for r.off < len(prog) && r.err == nil {
		op := r.u8()
		var err error
		switch op >> 6 {
		case 1: // DW_CFA_advance_loc
			err = emit(loc + uint64(op&0x3f)*caf)
		case 2: // DW_CFA_offset
			setReg(uint64(op&0x3f), regRule{kind: ruleOffset, off: int64(r.uleb()) * daf})
		case 3: // DW_CFA_restore
			err = restore(uint64(op & 0x3f))
		default:
			switch op {
			case 0x00: // DW_CFA_nop
			case 0x01: // DW_CFA_set_loc
				// r counts from the start of prog: shift the section address so
				// a pc-relative operand is relative to its own position.
				ps := *sec
				ps.Addr += progOff
				var to uint64
				if sec.Kind == DebugFrame {
					ps.PtrSize = int(c.AddrSize)
					to = r.pointer(peAbsptr, &ps, 0)
				} else {
					to = r.pointer(c.FDEEncoding&^peIndirect, &ps, begin)
				}
				err = emit(to)
			case 0x02: // DW_CFA_advance_loc1
				err = emit(loc + uint64(r.u8())*caf)
			case 0x03: // DW_CFA_advance_loc2
				err = emit(loc + uint64(r.u16())*caf)
			case 0x04: // DW_CFA_advance_loc4
				err = emit(loc + uint64(r.u32())*caf)
			case 0x1d: // DW_CFA_MIPS_advance_loc8
				err = emit(loc + r.u64()*caf)
			case 0x05: // DW_CFA_offset_extended
				reg := r.uleb()
				setReg(reg, regRule{kind: ruleOffset, off: int64(r.uleb()) * daf})
			case 0x06: // DW_CFA_restore_extended
				err = restore(r.uleb())
			case 0x07: // DW_CFA_undefined
				setReg(r.uleb(), regRule{kind: ruleUndefined})
			case 0x08: // DW_CFA_same_value
				setReg(r.uleb(), regRule{kind: ruleSame})
			case 0x09: // DW_CFA_register
				reg := r.uleb()
				setReg(reg, regRule{kind: ruleRegister, reg: r.uleb()})
			case 0x0a: // DW_CFA_remember_state
				if len(stack) >= maxStateStack {
					return fmt.Errorf("DW_CFA_remember_state nested deeper than %d", maxStateStack)
				}
				stack = append(stack, *st)
			case 0x0b: // DW_CFA_restore_state
				if len(stack) == 0 {
					return fmt.Errorf("DW_CFA_restore_state without remember_state")
				}
				// The CFA is part of the remembered state (DWARF 5 §6.4.2.4).
				*st = stack[len(stack)-1]
				stack = stack[:len(stack)-1]
			case 0x0c: // DW_CFA_def_cfa
				reg := r.uleb()
				st.cfa = cfaRule{reg: reg, off: int64(r.uleb())}
			case 0x0d: // DW_CFA_def_cfa_register
				st.cfa.reg = r.uleb()
				st.cfa.expr = nil
			case 0x0e: // DW_CFA_def_cfa_offset
				st.cfa.off = int64(r.uleb())
				st.cfa.expr = nil
			case 0x0f: // DW_CFA_def_cfa_expression
				st.cfa = cfaRule{expr: r.bytes(r.uleb())}
			case 0x10: // DW_CFA_expression
				reg := r.uleb()
				setReg(reg, regRule{kind: ruleExpr, expr: r.bytes(r.uleb())})
			case 0x11: // DW_CFA_offset_extended_sf
				reg := r.uleb()
				setReg(reg, regRule{kind: ruleOffset, off: r.sleb() * daf})
			case 0x12: // DW_CFA_def_cfa_sf
				reg := r.uleb()
				st.cfa = cfaRule{reg: reg, off: r.sleb() * daf}
			case 0x13: // DW_CFA_def_cfa_offset_sf
				st.cfa.off = r.sleb() * daf
				st.cfa.expr = nil
			case 0x14: // DW_CFA_val_offset
				reg := r.uleb()
				setReg(reg, regRule{kind: ruleValOffset, off: int64(r.uleb()) * daf})
			case 0x15: // DW_CFA_val_offset_sf
				reg := r.uleb()
				setReg(reg, regRule{kind: ruleValOffset, off: r.sleb() * daf})
			case 0x16: // DW_CFA_val_expression
				reg := r.uleb()
				setReg(reg, regRule{kind: ruleValExpr, expr: r.bytes(r.uleb())})
			case 0x2d: // DW_CFA_AARCH64_negate_ra_state (DW_CFA_GNU_window_save elsewhere)
				st.raSigned = !st.raSigned
			case 0x2e: // DW_CFA_GNU_args_size: only matters for landing pads
				r.uleb()
			case 0x2f: // DW_CFA_GNU_negative_offset_extended
				reg := r.uleb()
				setReg(reg, regRule{kind: ruleOffset, off: -int64(r.uleb()) * daf})
			default:
				return fmt.Errorf("unknown CFA instruction %#x at offset %d", op, r.off-1)
			}
		}
		if err != nil {
			return err
		}
	}
	if r.err != nil {
		return fmt.Errorf("CFA instructions: %w", r.err)
	}
	if rows != nil && end > loc {
		*rows = append(*rows, stateRow{pc: loc, st: *st})
	}
	return nil
}
