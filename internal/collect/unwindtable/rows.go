package unwindtable

// Kind says how the walker finds the caller's frame from a row.
type Kind uint8

const (
	// KindNone: no unwind information covers these pcs (between FDEs, past the
	// last one). The walker falls back to frame pointers and counts it.
	KindNone Kind = iota
	// KindSP: CFA = SP + CFA*8.
	KindSP
	// KindFP: CFA = FP + CFA*8 (rbp on x86-64, x29 on arm64).
	KindFP
	// KindPLT: x86-64 lazy-binding PLT stubs, whose CFA depends on the pc inside
	// the 16-byte entry: CFA = SP + CFA*8 + ((PC&15) >= FP ? 8 : 0). FP holds the
	// threshold (11 for the classic PLT) because no PLT stub saves the frame pointer.
	KindPLT
	// KindFPDeref: CFA = *(FP + CFA*8) + DerefAdd(), the stack-realigning
	// (DRAP) prologue gcc emits for functions that align the stack beyond 16
	// bytes, and OpenSSL's assembly that keeps the entry SP in the frame.
	KindFPDeref
	// KindSPDeref: CFA = *(SP + CFA*8) + DerefAdd() (OpenSSL's perlasm code).
	KindSPDeref
	// KindSignal: a signal trampoline (__restore_rt). The interrupted context is
	// saved on the stack: SP at *(SP + CFA*8), RA (the interrupted pc) at
	// *(SP + RA*8), FP at *(SP + FP*8). The next frame is not a call site, so
	// the walker must not subtract 1 from its pc when looking it up.
	KindSignal
	// KindStop: the return address is undefined (_start, the child side of
	// clone/clone3): the outermost frame, the walk is complete.
	KindStop
	// KindUnsupported: the FDE's rule cannot be followed by the walker (CFA from
	// a register other than SP/FP, a general DWARF expression, an offset that is
	// not a multiple of 8). Counted, never guessed.
	KindUnsupported
	// KindFPSwitch: a frame by the frame-pointer chain in a function that
	// switched stacks (Go's systemstack, asmcgocall, vDSO calls on g0): the
	// caller's frame may lie below this one, on the stack it came from.
	KindFPSwitch
)

var kindNames = [...]string{"none", "sp", "fp", "plt", "fp-deref", "sp-deref", "signal", "stop", "unsupported", "fp-switch"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "kind?"
}

// Row flags.
const (
	// FlagRAInLR: the return address is still in the link register (x30), as at
	// the entry of every arm64 function. Only valid for the innermost frame.
	FlagRAInLR uint8 = 1 << iota
	// FlagSignal: the FDE's CIE has the 'S' augmentation.
	FlagSignal
	// FlagRASigned: arm64 pointer authentication is on for the saved RA; the
	// walker strips the signature bits before using it.
	FlagRASigned
	// FlagFPUnknown: the caller's frame pointer is saved in a way the row does not
	// describe (another register, an expression); the walker must not trust FP
	// in the caller.
	FlagFPUnknown
)

// derefAddShift: for the deref kinds, the upper four bits of Flags hold the
// value added after the load, in 8-byte units (0..120 bytes; OpenSSL uses 8).
const derefAddShift = 4

// DerefAdd is the byte offset added to the loaded CFA of KindFPDeref and KindSPDeref.
func (r Rule) DerefAdd() int64 { return int64(r.Flags>>derefAddShift) * 8 }

// Rule says how to unwind from one pc: where the CFA is, where the return
// address and the caller's frame pointer are. Offsets are in 8-byte units:
// every CFA and save slot in the x86-64 and arm64 libc and python3 we measured
// is 8-byte aligned, and the unit reaches ±256 KiB in an int16. A rule that
// does not fit becomes KindUnsupported.
type Rule struct {
	CFA   int16 // CFA offset in 8-byte units (meaning depends on Kind)
	FP    int16 // caller's FP saved at CFA + FP*8; 0: FP is unchanged
	RA    int16 // return address saved at CFA + RA*8 (unless FlagRAInLR)
	Kind  Kind
	Flags uint8
}

// Row is a rule and the first pc it applies to; it holds until the next row's PC.
type Row struct {
	PC uint32 // first pc covered, as an offset from Table.Base
	Rule
}

// RowSize is the encoded size of a Row in bytes (see Row.Encode); RuleSize of a Rule.
const (
	RowSize  = 12
	RuleSize = 8
)

// Encode appends the rule's little-endian wire form, the layout of
//
//	struct unwind_rule { __s16 cfa, fp, ra; __u8 kind, flags; };
func (r Rule) Encode(b []byte) []byte {
	return append(b,
		byte(r.CFA), byte(uint16(r.CFA)>>8),
		byte(r.FP), byte(uint16(r.FP)>>8),
		byte(r.RA), byte(uint16(r.RA)>>8),
		byte(r.Kind), r.Flags)
}

// DecodeRule reads a rule written by Rule.Encode.
func DecodeRule(b []byte) Rule {
	_ = b[RuleSize-1]
	return Rule{
		CFA:   int16(uint16(b[0]) | uint16(b[1])<<8),
		FP:    int16(uint16(b[2]) | uint16(b[3])<<8),
		RA:    int16(uint16(b[4]) | uint16(b[5])<<8),
		Kind:  Kind(b[6]),
		Flags: b[7],
	}
}

// Encode appends the row's little-endian wire form, the layout of
//
//	struct unwind_row { __u32 pc; struct unwind_rule rule; };
func (r Row) Encode(b []byte) []byte {
	b = append(b, byte(r.PC), byte(r.PC>>8), byte(r.PC>>16), byte(r.PC>>24))
	return r.Rule.Encode(b)
}

// DecodeRow reads a row written by Row.Encode.
func DecodeRow(b []byte) Row {
	_ = b[RowSize-1]
	return Row{
		PC:   uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24,
		Rule: DecodeRule(b[4:]),
	}
}

// units converts a byte offset to 8-byte units, if it is aligned and fits.
func units(off int64) (int16, bool) {
	if off%8 != 0 {
		return 0, false
	}
	u := off / 8
	if u < -1<<15 || u >= 1<<15 {
		return 0, false
	}
	return int16(u), true
}

// archRegs are the DWARF register numbers the rows refer to.
type archRegs struct {
	sp, fp, pc uint64 // pc: the DWARF number of the pc on x86-64 (rip, 16); none on arm64
	lr         uint64 // arm64 link register (x30); 0 on x86-64
}

var (
	regsX86_64 = archRegs{sp: 7, fp: 6, pc: 16}
	regsARM64  = archRegs{sp: 31, fp: 29, lr: 30, pc: ^uint64(0)}
)

// rowFor compiles one CFA table state into a rule.
func rowFor(st *frameState, c *CIE, a archRegs) Rule {
	var row Rule
	if c.Signal {
		row.Flags |= FlagSignal
		if sig, ok := signalRow(st, a); ok {
			sig.Flags |= FlagSignal
			return sig
		}
	}
	if st.raSigned {
		row.Flags |= FlagRASigned
	}
	unsupported := func() Rule {
		row.Kind = KindUnsupported
		row.CFA, row.FP, row.RA = 0, 0, 0
		return row
	}
	switch st.ra.kind {
	case ruleUndefined:
		row.Kind = KindStop
		return row
	case ruleOffset:
		ra, ok := units(st.ra.off)
		if !ok {
			return unsupported()
		}
		row.RA = ra
	case ruleUnset, ruleSame:
		if a.lr == 0 || c.RAColumn != a.lr {
			return unsupported()
		}
		row.Flags |= FlagRAInLR
	case ruleRegister:
		if a.lr == 0 || st.ra.reg != a.lr {
			return unsupported()
		}
		row.Flags |= FlagRAInLR
	default:
		return unsupported()
	}

	var cfaOff int64
	switch {
	case st.cfa.expr != nil:
		if off, thr, ok := pltExpr(st.cfa.expr, a); ok {
			row.Kind, cfaOff, row.FP = KindPLT, off, int16(thr)
		} else if off, add, ok := derefAddExpr(st.cfa.expr, a.fp); ok && add%8 == 0 && add>>3 < 16 {
			row.Kind, cfaOff = KindFPDeref, off
			row.Flags |= uint8(add>>3) << derefAddShift
		} else if off, add, ok := derefAddExpr(st.cfa.expr, a.sp); ok && add%8 == 0 && add>>3 < 16 {
			row.Kind, cfaOff = KindSPDeref, off
			row.Flags |= uint8(add>>3) << derefAddShift
		} else {
			return unsupported()
		}
	case st.cfa.reg == a.sp:
		row.Kind, cfaOff = KindSP, st.cfa.off
	case st.cfa.reg == a.fp:
		row.Kind, cfaOff = KindFP, st.cfa.off
	default:
		return unsupported()
	}
	cfa, ok := units(cfaOff)
	if !ok {
		return unsupported()
	}
	row.CFA = cfa
	if row.Kind == KindPLT {
		return row
	}
	switch st.fp.kind {
	case ruleUnset, ruleSame, ruleUndefined:
	case ruleOffset:
		fp, ok := units(st.fp.off)
		if !ok || fp == 0 {
			row.Flags |= FlagFPUnknown
		} else {
			row.FP = fp
		}
	case ruleRegister:
		if st.fp.reg != a.fp {
			row.Flags |= FlagFPUnknown
		}
	default:
		row.Flags |= FlagFPUnknown
	}
	return row
}

// signalRow recognises the CFI of a signal trampoline that describes the saved
// context by SP-relative addresses: CFA = *(SP+n), RA at SP+m, FP at SP+k
// (glibc's x86-64 __restore_rt). The offsets come from the CFI itself, so the
// row follows the kernel's rt_sigframe layout without sonde hard-coding it.
func signalRow(st *frameState, a archRegs) (Rule, bool) {
	n, ok := derefExpr(st.cfa.expr, a.sp)
	if !ok || st.ra.kind != ruleExpr || st.fp.kind != ruleExpr {
		return Rule{}, false
	}
	m, ok1 := bregExpr(st.ra.expr, a.sp)
	k, ok2 := bregExpr(st.fp.expr, a.sp)
	cu, ok3 := units(n)
	ru, ok4 := units(m)
	fu, ok5 := units(k)
	if !ok1 || !ok2 || !ok3 || !ok4 || !ok5 {
		return Rule{}, false
	}
	return Rule{Kind: KindSignal, CFA: cu, RA: ru, FP: fu}, true
}

// DWARF expression opcodes the recognisers need.
const (
	opDeref     = 0x06
	opPlusUcons = 0x23
	opShl       = 0x24
	opAnd       = 0x1a
	opPlus      = 0x22
	opGe        = 0x2a
	opLit0      = 0x30
	opBreg0     = 0x70
	opBregx     = 0x92
)

type exprOp struct {
	op  uint8
	reg uint64
	off int64
}

// decodeExpr splits a short expression into operations; it understands only the
// opcodes the recognisers match and fails on anything else.
func decodeExpr(e []byte, max int) ([]exprOp, bool) {
	r := &buf{b: e}
	var ops []exprOp
	for r.off < len(e) {
		if len(ops) == max {
			return nil, false
		}
		op := r.u8()
		switch {
		case op >= opBreg0 && op < opBreg0+32:
			ops = append(ops, exprOp{op: opBreg0, reg: uint64(op - opBreg0), off: r.sleb()})
		case op == opBregx:
			reg := r.uleb()
			ops = append(ops, exprOp{op: opBreg0, reg: reg, off: r.sleb()})
		case op >= opLit0 && op < opLit0+32:
			ops = append(ops, exprOp{op: opLit0, off: int64(op - opLit0)})
		case op == opPlusUcons:
			v := r.uleb()
			if v >= 1<<32 {
				return nil, false
			}
			ops = append(ops, exprOp{op: op, off: int64(v)})
		case op == opDeref, op == opShl, op == opAnd, op == opPlus, op == opGe:
			ops = append(ops, exprOp{op: op})
		default:
			return nil, false
		}
		if r.err != nil {
			return nil, false
		}
	}
	return ops, true
}

// bregExpr matches "DW_OP_breg<reg> n" and returns n.
func bregExpr(e []byte, reg uint64) (int64, bool) {
	ops, ok := decodeExpr(e, 1)
	if !ok || len(ops) != 1 || ops[0].op != opBreg0 || ops[0].reg != reg {
		return 0, false
	}
	return ops[0].off, true
}

// derefExpr matches "DW_OP_breg<reg> n; DW_OP_deref" and returns n.
func derefExpr(e []byte, reg uint64) (int64, bool) {
	n, add, ok := derefAddExpr(e, reg)
	return n, ok && add == 0
}

// derefAddExpr matches "DW_OP_breg<reg> n; DW_OP_deref[; DW_OP_plus_uconst m]"
// and returns n and m (0 when absent).
func derefAddExpr(e []byte, reg uint64) (n, m int64, ok bool) {
	ops, ok := decodeExpr(e, 3)
	if !ok || len(ops) < 2 || ops[0].op != opBreg0 || ops[0].reg != reg || ops[1].op != opDeref {
		return 0, 0, false
	}
	if len(ops) == 3 {
		if ops[2].op != opPlusUcons {
			return 0, 0, false
		}
		m = ops[2].off
	}
	return ops[0].off, m, true
}

// pltExpr matches the x86-64 PLT CFA expression binutils emits:
//
//	breg7(rsp) n; breg16(rip) 0; lit15; and; lit<t>; ge; lit3; shl; plus
//
// i.e. CFA = rsp + n + (((rip & 15) >= t) << 3), and returns n and t.
func pltExpr(e []byte, a archRegs) (int64, int64, bool) {
	ops, ok := decodeExpr(e, 9)
	if !ok || len(ops) != 9 {
		return 0, 0, false
	}
	want := []exprOp{
		{op: opBreg0, reg: a.sp, off: ops[0].off}, {op: opBreg0, reg: a.pc},
		{op: opLit0, off: 15}, {op: opAnd}, {op: opLit0, off: ops[4].off}, {op: opGe},
		{op: opLit0, off: 3}, {op: opShl}, {op: opPlus},
	}
	for i := range want {
		if ops[i] != want[i] {
			return 0, 0, false
		}
	}
	return ops[0].off, ops[4].off, true
}
