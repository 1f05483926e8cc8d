package cli

import (
	"runtime/debug"
	"testing"

	"github.com/spf13/cobra"
)

// The commands that run agents collect garbage at the default rate, the
// others at main's, and GOGC decides for all when it is set.
func TestCollectForAgents(t *testing.T) {
	const mains = 400
	old := debug.SetGCPercent(mains)
	t.Cleanup(func() { debug.SetGCPercent(old) })
	for _, tc := range []struct {
		name    string
		agents  bool
		environ []string
		want    int
	}{
		{"runs agents", true, []string{"HOME=/h"}, agentGCPercent},
		{"runs none", false, []string{"HOME=/h"}, mains},
		{"GOGC set", true, []string{"GOGC=50"}, mains},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := &cobra.Command{Use: "x"}
			if tc.agents {
				stopOnSignalsFor(cmd)
			}
			f := &Factory{Env: Env{Environ: tc.environ}}
			f.collectForAgents(cmd)
			if got := debug.SetGCPercent(mains); got != tc.want {
				t.Errorf("GC percent %d, want %d", got, tc.want)
			}
		})
	}
}
