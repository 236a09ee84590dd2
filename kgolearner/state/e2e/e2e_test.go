package e2e_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/learnerassignor/learner/kgolearner/state/e2e"
	"github.com/stretchr/testify/require"
)

func TestScript(t *testing.T) {
	cfg := e2e.Small
	cfg.Log = t.Logf
	for _, s := range e2e.Strategies {
		t.Run(s.Name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			res, err := e2e.Run(ctx, cfg, s)
			require.NoError(t, err)
			e2e.Table(os.Stdout, []e2e.Result{res})
			require.True(t, res.Exact, "final counts differ from a sequential count: %v", res.Diff)
		})
	}
}
