package agentconfig

import "strings"

// Quote writes args as one shell command line that agent.SplitCommand
// (and a shell) splits back into args: a word with anything but letters,
// digits and -_./=:,+@% is single-quoted.
func Quote(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = quoteWord(a)
	}
	return strings.Join(out, " ")
}

func quoteWord(s string) string {
	if s == "" {
		return "''"
	}
	safe := true
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:,+@%", r)) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
