package mdstate

import (
	"errors"
	"strings"
	"syscall"
	"unicode"
	"unicode/utf8"
)

// CleanText returns s as a state file can hold it: each byte of invalid
// UTF-8 and each control character other than tab, line feed and carriage
// return (NUL, ESC, DEL, the C1 controls) becomes U+FFFD. Every text ralph
// writes goes through it, so that no write, whatever an agent or a
// terminal handed over, makes a file one ralph then refuses to read ("is
// not valid UTF-8", "looks binary"), and nothing written can move a
// terminal's cursor when the file is shown.
func CleanText(s string) string {
	if isCleanText(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n <= 1, badControl(r):
			b.WriteRune(utf8.RuneError)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

func isCleanText(s string) bool {
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if badControl(rune(c)) {
				return false
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && n <= 1) || badControl(r) {
			return false
		}
		i += n
	}
	return true
}

func badControl(r rune) bool {
	return r != '\t' && r != '\n' && r != '\r' && unicode.IsControl(r)
}

// cleanLine is a value as ralph writes it on one line: clean text, its
// whitespace folded (oneLine).
func cleanLine(s string) string { return oneLine(CleanText(s)) }

// DiskFull reports whether err says that the disk, or the user's quota on
// it, is full.
func DiskFull(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}

// writeFailure is the FileError of a write to the state file name that
// failed with err. A full disk says so: the advice to check permissions
// that are fine sent people the wrong way.
func writeFailure(name, what string, err error) *FileError {
	fe := &FileError{File: name, Msg: what + ": " + unwrapPathErr(err), Hint: "check the permissions of the file and its folder", Err: err}
	switch {
	case DiskFull(err):
		fe.Msg, fe.Hint = what+": the disk is full", "free some space on it, then run again"
	case errors.Is(err, syscall.EROFS):
		fe.Msg, fe.Hint = what+": the file system is read-only", "ralph can write only to a writable file system"
	}
	return fe
}
