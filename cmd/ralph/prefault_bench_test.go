//go:build linux && amd64

package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ralph-dev/ralph/coordinator/proc"
)

// BenchmarkPrefault measures package prefault: ralph built as usual and
// with -tags ralph_noprefault (the package empty), each command run by
// both in turns. It reports each build's median wall time and the ratio
// of the two medians (without/with, above 1 when prefault helps), for
// `--version` (start-up alone) and for `status --json` on a small project
// in a git repository of one commit.
func BenchmarkPrefault(b *testing.B) {
	with, without := buildRalphTags(b, ""), buildRalphTags(b, "ralph_noprefault")
	env := gitEnv(b)
	dir := b.TempDir()
	for name, content := range benchStateFiles {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"}, {"-c", "user.name=Bench", "-c", "user.email=bench@example.com", "commit", "-q", "-m", "Start"}} {
		if res, err := proc.Run(b.Context(), proc.Cmd{Name: "git", Args: args, Dir: dir, Env: env}); err != nil || res.ExitCode != 0 {
			b.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, res.Stderr)
		}
	}
	for _, args := range [][]string{{"--version"}, {"status", "--json"}} {
		b.Run(strings.Join(args, "-"), func(b *testing.B) {
			var walls [2][]time.Duration
			for i := 0; b.Loop(); i++ {
				for _, j := range vsOrder(2, i) {
					bin := []string{with, without}[j]
					res, err := proc.Run(b.Context(), proc.Cmd{Name: bin, Args: args, Dir: dir, Env: env})
					if err != nil || res.ExitCode != 0 {
						b.Fatalf("%s %s: exit %d, %v\n%s", bin, strings.Join(args, " "), res.ExitCode, err, res.Stderr)
					}
					walls[j] = append(walls[j], res.Wall)
				}
			}
			for _, w := range walls {
				slices.Sort(w)
			}
			w, wo := vsMS(walls[0][len(walls[0])/2]), vsMS(walls[1][len(walls[1])/2])
			b.ReportMetric(w, "prefault-ms-median")
			b.ReportMetric(wo, "noprefault-ms-median")
			b.ReportMetric(wo/w, "noprefault-vs-prefault-x")
		})
	}
}
