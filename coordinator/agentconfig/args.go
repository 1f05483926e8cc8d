package agentconfig

import (
	"errors"
	"fmt"
	"strings"
)

// SplitArgs splits an args (or env) value into words the way a POSIX
// shell does, with no expansion of any kind: blanks separate words;
// single quotes keep everything literally; double quotes keep blanks, a
// backslash in them escaping only " \ $ and `; a backslash outside quotes
// escapes the next character. It is the same rule as --agent-cmd's.
func SplitArgs(s string) ([]string, error) {
	var (
		words   []string
		cur     strings.Builder
		inWord  bool
		quote   rune // 0, '\'' or '"'
		escaped bool
	)
	for _, r := range s {
		switch {
		case escaped:
			if quote == '"' && !strings.ContainsRune("\"\\$`", r) {
				cur.WriteByte('\\')
			}
			cur.WriteRune(r)
			escaped, inWord = false, true
		case quote == '\'':
			if r == '\'' {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '\\':
			escaped, inWord = true, true
		case quote == '"':
			if r == '"' {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	switch {
	case quote != 0:
		return nil, fmt.Errorf("unterminated %c quote", quote)
	case escaped:
		return nil, errors.New("ends with a lone backslash")
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}

// Quote writes args as one shell command line that SplitArgs (and a
// shell) splits back into args: a word with anything but letters, digits
// and -_./=:,+@% is single-quoted.
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
