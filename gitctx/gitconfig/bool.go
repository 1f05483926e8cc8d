package gitconfig

import "math"

// Bool reads a value as git reads a boolean: true for "", "true", "yes",
// "on", "1" (any case) and for other non-zero integers, false for "false",
// "no", "off", "0", ok false for anything else.
//
// The integers are git's: C's strtoimax in base 0 (leading whitespace, a
// sign, 0x for hexadecimal, a leading 0 for octal), an optional unit k, m
// or g (times 1024, 1024², 1024³) and a result that fits git's int. The
// empty string stands for an implicit boolean (a key without "="), which
// Get cannot tell from an explicit "key =" that git reads as false.
func Bool(value string) (b, ok bool) {
	switch {
	case value == "":
		return true, true
	case equalFold("true", value), equalFold("yes", value), equalFold("on", value):
		return true, true
	case equalFold("false", value), equalFold("no", value), equalFold("off", value):
		return false, true
	}
	n, ok := parseInt(value)
	return ok && n != 0, ok
}

// parseInt parses s as git_parse_int does: a C integer, then a unit, the
// product within [math.MinInt32, math.MaxInt32].
func parseInt(s string) (int64, bool) {
	n, rest, ok := parseCInt(s)
	if !ok {
		return 0, false
	}
	factor := unitFactor(rest)
	if factor == 0 || n > math.MaxInt32/factor || n < math.MinInt32/factor {
		return 0, false
	}
	return n * factor, true
}

// parseCInt parses the integer at the start of s as strtoimax(s, &rest, 0)
// does; ok is false when s starts with no digits or the value overflows.
func parseCInt(s string) (n int64, rest string, ok bool) {
	s = trimCSpace(s)
	neg := false
	if s != "" && (s[0] == '+' || s[0] == '-') {
		neg, s = s[0] == '-', s[1:]
	}
	base := int64(10)
	switch {
	case len(s) > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') && digitValue(s[2]) < 16:
		base, s = 16, s[2:]
	case s != "" && s[0] == '0':
		base = 8
	}
	n, rest, ok = parseDigits(s, base)
	if neg {
		n = -n
	}
	return n, rest, ok
}

// parseDigits parses the digits of base at the start of s; ok is false
// when there are none or they overflow. Anything past 2⁵³ overflows here:
// it is out of git's range in any case.
func parseDigits(s string, base int64) (n int64, rest string, ok bool) {
	i := 0
	overflow := false
	for ; i < len(s) && digitValue(s[i]) < base; i++ {
		n = n*base + digitValue(s[i])
		if n > 1<<53 {
			overflow, n = true, 0
		}
	}
	return n, s[i:], i > 0 && !overflow
}

// digitValue is the value of c as a digit in bases up to 16, or 99.
func digitValue(c byte) int64 {
	switch {
	case '0' <= c && c <= '9':
		return int64(c - '0')
	case 'a' <= c && c <= 'f':
		return int64(c-'a') + 10
	case 'A' <= c && c <= 'F':
		return int64(c-'A') + 10
	}
	return 99
}

// trimCSpace drops the leading characters C's isspace holds for.
func trimCSpace(s string) string {
	for s != "" && (s[0] == ' ' || '\t' <= s[0] && s[0] <= '\r') {
		s = s[1:]
	}
	return s
}

// unitFactor is the multiplier of git's unit suffix, 0 for an unknown one.
func unitFactor(unit string) int64 {
	switch unit {
	case "":
		return 1
	case "k", "K":
		return 1 << 10
	case "m", "M":
		return 1 << 20
	case "g", "G":
		return 1 << 30
	}
	return 0
}
