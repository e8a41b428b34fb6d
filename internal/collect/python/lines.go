package python

// LineOf310 is the line of byte offset off in a 3.10 co_linetable: pairs
// of (bytes covered, line delta), the delta -128 meaning "no line" for
// the range, lines starting at first. 0 when off is not covered.
func LineOf310(table []byte, first, off int) int {
	line, start := first, 0
	for i := 0; i+1 < len(table); i += 2 {
		end := start + int(table[i])
		d := int(int8(table[i+1]))
		cur := line + d
		if d != -128 {
			line = cur
		}
		if off >= start && off < end {
			if d == -128 {
				return 0
			}
			return line
		}
		start = end
	}
	return 0
}

// LineOf311 is the line of instruction index (code units) in a 3.11+
// location table: entries of a first byte (bit 7 set; bits 3..6 a code,
// bits 0..2 the units covered - 1) and the code's data. 0 when the
// instruction has no line or is not covered.
func LineOf311(table []byte, first, index int) int {
	line, at := first, 0
	for i := 0; i < len(table); {
		b := table[i]
		i++
		if b&0x80 == 0 {
			return 0 // not an entry's start: a table sonde does not understand
		}
		code, n := int(b>>3&15), int(b&7)+1
		hasLine := true
		switch {
		case code == 15: // no location
			hasLine = false
		case code == 14: // long form: line delta, end line delta, column, end column
			var d int
			d, i = svarint(table, i)
			line += d
			_, i = varint(table, i)
			_, i = varint(table, i)
			_, i = varint(table, i)
		case code == 13: // no column: line delta
			var d int
			d, i = svarint(table, i)
			line += d
		case code >= 10: // one line form: delta code-10, two column bytes
			line += code - 10
			i += 2
		default: // short form: same line, one column byte
			i++
		}
		if index >= at && index < at+n {
			if !hasLine {
				return 0
			}
			return line
		}
		at += n
	}
	return 0
}

// varint reads 6-bit groups, least significant first, bit 6 continuing.
func varint(b []byte, i int) (int, int) {
	v, shift := 0, 0
	for i < len(b) {
		c := b[i]
		i++
		v |= int(c&63) << shift
		shift += 6
		if c&64 == 0 {
			break
		}
	}
	return v, i
}

// svarint is a varint whose lowest bit is the sign.
func svarint(b []byte, i int) (int, int) {
	v, i := varint(b, i)
	if v&1 != 0 {
		return -(v >> 1), i
	}
	return v >> 1, i
}
