package state

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// A write that fails with a code retrying cannot fix stops Run
// (refusedAgain); one that a new round of the batch may get past sends the
// member round again: a passing failure, a retriable code kgo gave up on,
// its own timeouts, and a producer the broker no longer knows, which kgo
// reports when it cannot recover by itself and which kfake never answers.
func TestRefusedAgain(t *testing.T) {
	for err, want := range map[error]bool{
		kerr.MessageTooLarge:          true,
		kerr.TopicAuthorizationFailed: true,
		kerr.SaslAuthenticationFailed: true,
		kerr.InvalidRecord:            true,
		kerr.InvalidTimestamp:         true,
		kerr.PolicyViolation:          true,
		kerr.UnknownServerError:       false,
		kerr.NotEnoughReplicas:        false,
		kerr.OutOfOrderSequenceNumber: false,
		kerr.UnknownProducerID:        false,
		kerr.InvalidProducerIDMapping: false,
		kerr.InvalidProducerEpoch:     false,
		kerr.ProducerFenced:           false,
		kgo.ErrRecordTimeout:          false,
		context.DeadlineExceeded:      false,
	} {
		wrapped := fmt.Errorf("%w: changelog: %w", errWrite, err)
		assert.Equal(t, want, refusedAgain(wrapped), "refusedAgain(%v)", wrapped)
	}
}
