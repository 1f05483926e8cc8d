package coordinator

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func TestSecretsFromEnv(t *testing.T) {
	env := []string{
		"ANTHROPIC_API_KEY=sk-ant-api03-abcdefghijklmnop",
		"GITHUB_TOKEN=ghp_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
		"DB_PASSWORD=hunter2hunter2",
		"client_secret=s3cr3t-value",
		"SHORT_TOKEN=abc",                     // too short to matter
		"HOME=/home/someone/with/a/long/path", // not a secret's name
		"SSH_KEY_PATH=/home/someone/.ssh/id_ed25519",
		"GIT_CONFIG_KEY_0=init.defaultBranch",
		"MALFORMED_TOKEN",
	}
	got := SecretsFromEnv(env)
	want := []string{"sk-ant-api03-abcdefghijklmnop", "ghp_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "hunter2hunter2", "s3cr3t-value"}
	if !slices.Equal(got, want) {
		t.Errorf("SecretsFromEnv = %q, want %q", got, want)
	}
}

func TestRedact(t *testing.T) {
	r := newRedactor([]string{"hunter2hunter2", "multi\nline-secret-part", `with"quote-secret`})
	tests := []struct{ in, want string }{
		{"password is hunter2hunter2.", "password is [redacted]."},
		{"twice hunter2hunter2hunter2hunter2", "twice [redacted]"}, // adjacent: one
		{"openai sk-proj-ABCDEFGHIJKLMNOPQRSTUVWX end", "openai [redacted] end"},
		{"anthropic sk-ant-api03-ABCDEFGHIJKLMNOPQRST_xyz-123", "anthropic [redacted]"},
		{"gh ghp_0123456789abcdefghijABCDEFGHIJ0123456789", "gh [redacted]"},
		{"pat github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz", "pat [redacted]"},
		{"aws AKIAIOSFODNN7EXAMPLE,", "aws [redacted],"},
		{"slack xoxb-1234567890-abcdefghij", "slack [redacted]"},
		{`{"text":"with\"quote-secret"}`, `{"text":"[redacted]"}`},
		{"a line of it: line-secret-part", "a line of it: [redacted]"},
		// Words that merely contain a prefix are left alone.
		{"task-abcdefghijklmnopqrstuvwxyz0123", "task-abcdefghijklmnopqrstuvwxyz0123"},
		{"sk-short", "sk-short"},
		{"AKIA is a prefix", "AKIA is a prefix"},
		{"nothing here", "nothing here"},
	}
	for _, tt := range tests {
		if got := r.redact(tt.in); got != tt.want {
			t.Errorf("redact(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// A secret split across writes anywhere, on short lines and in a line far
// longer than the writer holds, comes out redacted: the output is exactly
// the whole text redacted at once.
func TestRedactWriterSplits(t *testing.T) {
	secret := "hunter2hunter2"
	token := "sk-proj-" + strings.Repeat("Ab9_", 10)
	r := newRedactor([]string{secret})
	var short strings.Builder
	for i := range 50 {
		short.WriteString("line " + string(rune('a'+i%26)) + " " + secret + " and " + token + "\n")
	}
	var long strings.Builder
	for long.Len() < 3*maxPending {
		long.WriteString("xxxxxxxx " + secret + " yyyy " + token + " ")
	}
	long.WriteString("\n")
	for _, text := range []string{short.String(), long.String()} {
		want := r.redact(text)
		if strings.Contains(want, secret) || strings.Contains(want, token) {
			t.Fatal("redact leaves a secret")
		}
		// Every split point of the first 300 bytes, then random chunks.
		for cut := 0; cut < min(300, len(text)); cut++ {
			if got := writeChunks(t, r, text, []int{cut}); got != want {
				t.Fatalf("split at %d: output differs from the text redacted whole", cut)
			}
		}
		rng := rand.New(rand.NewPCG(1, 2))
		for range 50 {
			var cuts []int
			for at := 0; at < len(text); at += 1 + rng.IntN(9000) {
				cuts = append(cuts, at)
			}
			if got := writeChunks(t, r, text, cuts); got != want {
				t.Fatalf("random chunks: output differs from the text redacted whole (%d bytes, want %d)", len(got), len(want))
			}
		}
	}
}

func writeChunks(t *testing.T, r *redactor, text string, cuts []int) string {
	t.Helper()
	var out bytes.Buffer
	w := &redactWriter{w: &out, r: r}
	last := 0
	for _, c := range append(cuts, len(text)) {
		if c < last {
			continue
		}
		if _, err := w.Write([]byte(text[last:c])); err != nil {
			t.Fatal(err)
		}
		last = c
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

// A line of a megabyte and more that is all one token's characters is
// still written, redacted, with bounded memory.
func TestRedactWriterEndlessToken(t *testing.T) {
	var out bytes.Buffer
	w := &redactWriter{w: &out, r: newRedactor(nil)}
	chunk := []byte(strings.Repeat("A", 64<<10))
	if _, err := w.Write([]byte("sk-")); err != nil {
		t.Fatal(err)
	}
	for range 40 {
		if _, err := w.Write(chunk); err != nil {
			t.Fatal(err)
		}
		if cap(w.pending) > 4*hardPending {
			t.Fatalf("holding %d bytes", cap(w.pending))
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "sk-AAAA") {
		t.Error("the token's start was written")
	}
}
