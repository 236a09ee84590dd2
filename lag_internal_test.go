package learner

import (
	"math"
	"testing"
)

// TestLagRankAgreesWithCaughtUp checks that the two readings of a reported
// lag agree (reportedLag.rank): whichever copy rule 13 counts caught up
// ranks warmer (rule 5) than every copy it counts behind, a lag not
// reported included, and that compare is a total order (antisymmetric,
// transitive) over lags reported or not, at every acceptable lag.
func TestLagRankAgreesWithCaughtUp(t *testing.T) {
	values := []int64{0, 1, 99, 100, 101, 1000, math.MaxInt64 - 1, math.MaxInt64}
	lags := []reportedLag{{}}
	for _, v := range values {
		lags = append(lags, reportedLag{v, true})
	}
	for _, acceptable := range values {
		for _, a := range lags {
			for _, b := range lags {
				c := a.compare(b, acceptable)
				if a.caughtUp(acceptable) && !b.caughtUp(acceptable) && c >= 0 {
					t.Errorf("acceptable %d: %+v caught up, %+v not, but compare = %d, want < 0", acceptable, a, b, c)
				}
				if r := b.compare(a, acceptable); r != -c {
					t.Errorf("acceptable %d: compare(%+v, %+v) = %d, reversed %d: not antisymmetric", acceptable, a, b, c, r)
				}
				if c == 0 && a != b {
					t.Errorf("acceptable %d: compare(%+v, %+v) = 0 for different lags", acceptable, a, b)
				}
				for _, d := range lags {
					if c < 0 && b.compare(d, acceptable) < 0 && a.compare(d, acceptable) >= 0 {
						t.Errorf("acceptable %d: %+v < %+v < %+v but not %+v < %+v", acceptable, a, b, d, a, d)
					}
				}
			}
		}
	}
}
