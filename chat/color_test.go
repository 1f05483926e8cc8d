package chat

import "testing"

func TestColorize(t *testing.T) {
	for in, want := range map[string]string{
		"  ✓ T1: done · 1 in, 2 out tokens\n":          "  \033[32m✓\033[0m T1: done · 1 in, 2 out tokens\n",
		"▶ T2: Go (iteration 1)\n":                     "\033[1;36m▶\033[0m T2: Go (iteration 1)\n",
		"plain text ✓ inside\n":                        "plain text ✓ inside\n",
		"  ✗ T1: failed\n  ↻ T1: trying again in 2s\n": "  \033[31m✗\033[0m T1: failed\n  \033[2m↻\033[0m T1: trying again in 2s\n",
	} {
		if got := Colorize(in); got != want {
			t.Errorf("Colorize(%q) = %q, want %q", in, got, want)
		}
	}
}
