package chat

import "strings"

// Colour, restrained: only the mark that starts a line of the session's
// record (done, failed, stopped, started, retrying) is coloured, so that
// the eye finds outcomes; the text stays the terminal's own colour. Front
// ends call Colorize only on a terminal that takes escape codes, and not
// with NO_COLOR set.

// markColors are the SGR codes of the marks.
var markColors = map[string]string{
	"✓": "32",   // green: done
	"✗": "31",   // red: failed
	"!": "33",   // yellow: blocked, a notice
	"■": "33",   // yellow: stopped, interrupted
	"▶": "1;36", // bold cyan: a task starts
	"↻": "2",    // dim: a retry, a resume
	"✎": "35",   // magenta: a person's edit
}

// Colorize colours the mark at the start of each line of text (after its
// indent).
func Colorize(text string) string {
	lines := strings.SplitAfter(text, "\n")
	for i, l := range lines {
		body := strings.TrimLeft(l, " ")
		indent := l[:len(l)-len(body)]
		for mark, code := range markColors {
			if strings.HasPrefix(body, mark+" ") {
				lines[i] = indent + "\033[" + code + "m" + mark + "\033[0m" + body[len(mark):]
				break
			}
		}
	}
	return strings.Join(lines, "")
}
