package learner

import "errors"

// Errors returned by New and Assign wrap one of these, so callers can test
// them with errors.Is.
var (
	// ErrInvalidTopology reports a task list New cannot use.
	ErrInvalidTopology = errors.New("invalid topology")
	// ErrInvalidOptions reports an option out of range.
	ErrInvalidOptions = errors.New("invalid options")
	// ErrInvalidMember reports member metadata Assign cannot use.
	ErrInvalidMember = errors.New("invalid member metadata")
)
