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
	m := &cfaMachine{r: &buf{b: prog, order: sec.Order}, c: c, sec: sec, progOff: progOff,
		ar: ar, st: st, init: init, rows: rows, begin: begin, loc: begin}
	for m.r.off < len(prog) && m.r.err == nil {
		if err := m.step(m.r.u8()); err != nil {
			return err
		}
	}
	if m.r.err != nil {
		return fmt.Errorf("CFA instructions: %w", m.r.err)
	}
	if rows != nil && end > m.loc {
		*rows = append(*rows, stateRow{pc: m.loc, st: *st})
	}
	return nil
}

// cfaMachine is the state of execute while it interprets one CFA program.
type cfaMachine struct {
	r       *buf
	c       *CIE
	sec     *Section
	progOff uint64 // section offset of the program, for DW_CFA_set_loc
	ar      regs
	st      *frameState
	init    *frameState  // the state after the CIE's instructions; nil while running them
	rows    *[]stateRow  // nil while running the CIE's instructions
	begin   uint64       // the FDE's first pc
	loc     uint64       // the pc the current state starts at
	stack   []frameState // DW_CFA_remember_state
}

// step executes the instruction op, whose operands follow in m.r. The
// extended opcodes are grouped by what they change.
func (m *cfaMachine) step(op byte) error {
	switch op >> 6 {
	case 1: // DW_CFA_advance_loc
		return m.emit(m.loc + uint64(op&0x3f)*m.c.CodeAlign)
	case 2: // DW_CFA_offset
		m.setReg(uint64(op&0x3f), regRule{kind: ruleOffset, off: int64(m.r.uleb()) * m.c.DataAlign})
		return nil
	case 3: // DW_CFA_restore
		return m.restore(uint64(op & 0x3f))
	}
	if ok, err := m.locationOp(op); ok {
		return err
	}
	if ok, err := m.registerOp(op); ok {
		return err
	}
	if m.cfaOp(op) {
		return nil
	}
	return m.otherOp(op)
}

// locationOp executes the instructions that move the location, reporting
// whether op is one of them.
func (m *cfaMachine) locationOp(op byte) (bool, error) {
	r, caf := m.r, m.c.CodeAlign
	switch op {
	case 0x01: // DW_CFA_set_loc
		return true, m.emit(m.setLocTarget())
	case 0x02: // DW_CFA_advance_loc1
		return true, m.emit(m.loc + uint64(r.u8())*caf)
	case 0x03: // DW_CFA_advance_loc2
		return true, m.emit(m.loc + uint64(r.u16())*caf)
	case 0x04: // DW_CFA_advance_loc4
		return true, m.emit(m.loc + uint64(r.u32())*caf)
	case 0x1d: // DW_CFA_MIPS_advance_loc8
		return true, m.emit(m.loc + r.u64()*caf)
	}
	return false, nil
}

// setLocTarget reads the address operand of DW_CFA_set_loc.
func (m *cfaMachine) setLocTarget() uint64 {
	// r counts from the start of prog: shift the section address so a
	// pc-relative operand is relative to its own position.
	ps := *m.sec
	ps.Addr += m.progOff
	if m.sec.Kind == DebugFrame {
		ps.PtrSize = int(m.c.AddrSize)
		return m.r.pointer(peAbsptr, &ps, 0)
	}
	return m.r.pointer(m.c.FDEEncoding&^peIndirect, &ps, m.begin)
}

// registerOp executes the instructions that set the rule of one register,
// reporting whether op is one of them.
func (m *cfaMachine) registerOp(op byte) (bool, error) {
	r, daf := m.r, m.c.DataAlign
	switch op {
	case 0x05: // DW_CFA_offset_extended
		reg := r.uleb()
		m.setReg(reg, regRule{kind: ruleOffset, off: int64(r.uleb()) * daf})
	case 0x06: // DW_CFA_restore_extended
		return true, m.restore(r.uleb())
	case 0x07: // DW_CFA_undefined
		m.setReg(r.uleb(), regRule{kind: ruleUndefined})
	case 0x08: // DW_CFA_same_value
		m.setReg(r.uleb(), regRule{kind: ruleSame})
	case 0x09: // DW_CFA_register
		reg := r.uleb()
		m.setReg(reg, regRule{kind: ruleRegister, reg: r.uleb()})
	case 0x10: // DW_CFA_expression
		reg := r.uleb()
		m.setReg(reg, regRule{kind: ruleExpr, expr: r.bytes(r.uleb())})
	case 0x11: // DW_CFA_offset_extended_sf
		reg := r.uleb()
		m.setReg(reg, regRule{kind: ruleOffset, off: r.sleb() * daf})
	case 0x14: // DW_CFA_val_offset
		reg := r.uleb()
		m.setReg(reg, regRule{kind: ruleValOffset, off: int64(r.uleb()) * daf})
	case 0x15: // DW_CFA_val_offset_sf
		reg := r.uleb()
		m.setReg(reg, regRule{kind: ruleValOffset, off: r.sleb() * daf})
	case 0x16: // DW_CFA_val_expression
		reg := r.uleb()
		m.setReg(reg, regRule{kind: ruleValExpr, expr: r.bytes(r.uleb())})
	case 0x2f: // DW_CFA_GNU_negative_offset_extended
		reg := r.uleb()
		m.setReg(reg, regRule{kind: ruleOffset, off: -int64(r.uleb()) * daf})
	default:
		return false, nil
	}
	return true, nil
}

// cfaOp executes the instructions that define the CFA, reporting whether op
// is one of them.
func (m *cfaMachine) cfaOp(op byte) bool {
	r, st := m.r, m.st
	switch op {
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
	case 0x12: // DW_CFA_def_cfa_sf
		reg := r.uleb()
		st.cfa = cfaRule{reg: reg, off: r.sleb() * m.c.DataAlign}
	case 0x13: // DW_CFA_def_cfa_offset_sf
		st.cfa.off = r.sleb() * m.c.DataAlign
		st.cfa.expr = nil
	default:
		return false
	}
	return true
}

// otherOp executes the remaining instructions: padding, the state stack and
// vendor extensions. Anything else is an error.
func (m *cfaMachine) otherOp(op byte) error {
	switch op {
	case 0x00: // DW_CFA_nop
	case 0x0a: // DW_CFA_remember_state
		if len(m.stack) >= maxStateStack {
			return fmt.Errorf("DW_CFA_remember_state nested deeper than %d", maxStateStack)
		}
		m.stack = append(m.stack, *m.st)
	case 0x0b: // DW_CFA_restore_state
		if len(m.stack) == 0 {
			return fmt.Errorf("DW_CFA_restore_state without remember_state")
		}
		// The CFA is part of the remembered state (DWARF 5 §6.4.2.4).
		*m.st = m.stack[len(m.stack)-1]
		m.stack = m.stack[:len(m.stack)-1]
	case 0x2d: // DW_CFA_AARCH64_negate_ra_state (DW_CFA_GNU_window_save elsewhere)
		m.st.raSigned = !m.st.raSigned
	case 0x2e: // DW_CFA_GNU_args_size: only matters for landing pads
		m.r.uleb()
	default:
		return fmt.Errorf("unknown CFA instruction %#x at offset %d", op, m.r.off-1)
	}
	return nil
}

// emit ends the current row at next and starts a new one there.
func (m *cfaMachine) emit(next uint64) error {
	if m.rows == nil {
		return fmt.Errorf("location advance in CIE")
	}
	if next < m.loc {
		return fmt.Errorf("location moves backwards to %#x", next)
	}
	if next > m.loc {
		*m.rows = append(*m.rows, stateRow{pc: m.loc, st: *m.st})
		m.loc = next
	}
	return nil
}

// setReg sets the rule of reg; registers the walker does not recover are ignored.
func (m *cfaMachine) setReg(reg uint64, rule regRule) {
	switch reg {
	case m.ar.ra:
		m.st.ra = rule
	case m.ar.fp:
		m.st.fp = rule
	case m.ar.sp:
		m.st.sp = rule
	}
}

// restore sets the rule of reg back to the one the CIE's instructions left.
func (m *cfaMachine) restore(reg uint64) error {
	if m.init == nil {
		return fmt.Errorf("DW_CFA_restore in CIE")
	}
	switch reg {
	case m.ar.ra:
		m.st.ra = m.init.ra
	case m.ar.fp:
		m.st.fp = m.init.fp
	case m.ar.sp:
		m.st.sp = m.init.sp
	}
	return nil
}
