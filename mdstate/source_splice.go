package mdstate

import (
	"bytes"
	"unicode/utf8"
)

// spliced returns the source of out, s's bytes with edits spliced in
// (edits sorted by Start, in s's offsets), checked and indexed as
// newSource does but only where the edits changed lines: the lines they
// touch are read anew, the others keep their checks and move. ok is false
// when a changed line fails a check (newSource of out says which).
func (s *source) spliced(out []byte, edits []Edit) (*source, bool) {
	ns := &source{name: s.name, src: out, eol: "\n", crlf: s.crlf, lf: s.lf}
	if bytes.HasPrefix(out, bomBytes) {
		ns.bom = len(bomBytes)
	}
	starts := make([]int, 0, len(s.lineStarts)+8)
	old := s.lineStarts
	oi, shift := 0, 0
	for i := 0; i < len(edits); {
		// The whole lines the edits from i on touch, as one run while
		// they touch the same or adjacent lines.
		lo, hi := s.lineStart(edits[i].Start), s.lineEnd(edits[i].End)
		delta := 0
		for ; i < len(edits) && s.lineStart(edits[i].Start) <= hi; i++ {
			hi = max(hi, s.lineEnd(edits[i].End))
			delta += len(edits[i].Text) - (edits[i].End - edits[i].Start)
		}
		for oi < len(old) && old[oi] < lo {
			starts = append(starts, old[oi]+shift)
			oi++
		}
		for oi < len(old) && old[oi] < hi {
			oi++
		}
		crlf, lf := countEnds(s.src[lo:hi])
		ns.crlf -= crlf
		ns.lf -= lf
		nlo, nhi := lo+shift, hi+shift+delta
		var ok bool
		if starts, ok = ns.indexRun(starts, nlo, nhi); !ok {
			return nil, false
		}
		shift += delta
	}
	for ; oi < len(old); oi++ {
		starts = append(starts, old[oi]+shift)
	}
	ns.lineStarts = starts
	if ns.crlf > ns.lf {
		ns.eol = "\r\n"
	}
	return ns, true
}

// indexRun checks the lines of s.src[lo:hi] (whole lines) as newSource
// does, adds their starts (all but one at hi, which the next line's own
// start gives) to starts and their ends to s's counts.
func (s *source) indexRun(starts []int, lo, hi int) ([]int, bool) {
	run := s.src[lo:hi]
	if bytes.IndexByte(run, 0) >= 0 || !utf8.Valid(run) {
		return nil, false
	}
	if lo < len(s.src) && (lo == 0 || s.src[lo-1] == '\n') {
		starts = append(starts, lo)
	}
	for i := lo; i < hi; {
		j := bytes.IndexByte(s.src[i:hi], '\n')
		end := hi
		if j >= 0 {
			end = i + j
		}
		if end-i > MaxLineBytes {
			return nil, false
		}
		if j < 0 {
			break
		}
		if end > i && s.src[end-1] == '\r' {
			s.crlf++
		} else {
			s.lf++
		}
		i = end + 1
		if i < hi {
			starts = append(starts, i)
		}
	}
	return starts, true
}

// countEnds counts the lines of b that end in "\r\n" and in "\n" alone,
// as newSource counts them.
func countEnds(b []byte) (crlf, lf int) {
	start := 0
	for {
		j := bytes.IndexByte(b[start:], '\n')
		if j < 0 {
			return crlf, lf
		}
		end := start + j
		if end > start && b[end-1] == '\r' {
			crlf++
		} else {
			lf++
		}
		start = end + 1
	}
}
