package agentconfig

import (
	"fmt"
	"strings"

	"github.com/ralph-dev/ralph/coordinator/agent"
)

// unknownAgent is the warning for a name that is no agent CLI ralph
// drives, with the nearest one when there is one.
func unknownAgent(name, consequence string) string {
	names := agent.CLINames()
	msg := fmt.Sprintf("unknown agent %q", name)
	if s := suggest(agentName(name), names, nil); s != "" {
		msg += "; did you mean " + s + "?"
	}
	return msg + fmt.Sprintf(" (ralph drives %s); %s", joinAnd(names), consequence)
}

// unknownKey is the warning for a key that is not among keys.
func unknownKey(name string, keys []string, known string) string {
	msg := fmt.Sprintf("unknown key %q", name)
	if s := suggest(name, keys, keyHints); s != "" {
		msg += "; did you mean " + s + "?"
	}
	return msg + " (" + known + ")"
}

// suggest is the word among words that word was probably meant to be:
// a hint's, one that starts the other ("claude-code", "open"), or one at
// most two edits away; "" when none is.
func suggest(word string, words []string, hints map[string]string) string {
	if h, ok := hints[word]; ok {
		for _, w := range words {
			if w == h {
				return h
			}
		}
	}
	if len(word) >= 3 {
		for _, w := range words {
			if strings.HasPrefix(word, w) || strings.HasPrefix(w, word) {
				return w
			}
		}
	}
	best, bestD := "", 3
	for _, w := range words {
		if d := distance(word, w); d < bestD && d < len(w) {
			best, bestD = w, d
		}
	}
	return best
}

// distance is the edit distance of a and b, a transposition counting as
// one edit ("modle", "model").
func distance(a, b string) int {
	x, y := []rune(a), []rune(b)
	d := make([][]int, len(x)+1)
	for i := range d {
		d[i] = make([]int, len(y)+1)
		d[i][0] = i
	}
	for j := range y {
		d[0][j+1] = j + 1
	}
	for i := 1; i <= len(x); i++ {
		for j := 1; j <= len(y); j++ {
			cost := 1
			if x[i-1] == y[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && x[i-1] == y[j-2] && x[i-2] == y[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(x)][len(y)]
}

// joinAnd lists words as "a, b, c and d".
func joinAnd(words []string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " and " + words[len(words)-1]
}

// NearestAgent is the agent name (a CLI ralph drives, or exec) that name
// was probably meant to be; "" when none is near.
func NearestAgent(name string) string {
	return suggest(agentName(name), append(agent.CLINames(), "exec"), nil)
}
