package e2e_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/learnerassignor/learner/kgolearner/state/e2e"
	"github.com/stretchr/testify/require"
)

// TestScript plays the e2e script at the Small size with every strategy:
// final counts must be exact, and the learner strategies must restore
// nothing cold in the planned scale-up and scale-down. The numbers of the
// issue's size come from "go run ./e2e/measure" (README).
func TestScript(t *testing.T) {
	cfg := e2e.Small
	cfg.Log = t.Logf
	for i, s := range e2e.Strategies {
		t.Run(s.Name, func(t *testing.T) {
			if testing.Short() && i > 0 {
				// CI's race run: one strategy exercises the runtime's
				// concurrency; the others differ in the balancer only.
				t.Skip("-short runs the first strategy only")
			}
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			res, err := e2e.Run(ctx, cfg, s)
			require.NoError(t, err)
			e2e.Table(os.Stdout, []e2e.Result{res})
			require.True(t, res.Exact, "final counts differ from a sequential count: %v", res.Diff)
			if !s.Cooperative {
				// Planned moves go to learners that caught up.
				for _, p := range res.Phases[:2] {
					require.Zero(t, p.ColdRestores, "%s: cold restores in %s", s.Name, p.Name)
				}
			}
		})
	}
}
