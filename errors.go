package learner

import (
	"errors"
	"fmt"

	"github.com/learnerassignor/learner/internal/errtext"
)

// Errors returned by New, Assign and AssignIndexed (and by AssignmentByID,
// MemberByID, Worker.Apply and Worker.SetLag, which wrap ErrInvalidMember)
// wrap one of these, so callers can test them with errors.Is. ParseRebalance's
// errors wrap ErrSyntax instead.
var (
	// ErrInvalidTopology reports a task list New cannot use.
	ErrInvalidTopology = errors.New("invalid topology")
	// ErrInvalidOptions reports an option out of range.
	ErrInvalidOptions = errors.New("invalid options")
	// ErrInvalidMember reports member metadata Assign cannot use.
	ErrInvalidMember = errors.New("invalid member metadata")
)

// MemberError is the error Assign returns for one member's metadata it
// cannot use. It wraps ErrInvalidMember. A caller that knows where each
// member came from (as Rebalance.Locate knows input lines) can name that
// place instead of the position.
type MemberError struct {
	// Position is the member's index in the slice given to Assign.
	Position int
	// ID is the member's ID as given, malformed or not.
	ID string
	// Problem says what is wrong, naming the task or field concerned.
	Problem string
	// DuplicateOf is, when the member's ID is given twice, the position of
	// the first member with that ID; -1 otherwise.
	DuplicateOf int
}

// Error names the member by ID and position; IDs and tasks in it are
// quoted and cut to their first 40 bytes.
func (e *MemberError) Error() string {
	also := ""
	if e.DuplicateOf >= 0 {
		also = fmt.Sprintf(" (also at position %d)", e.DuplicateOf)
	}
	return fmt.Sprintf("learner: member %s (position %d): %s%s: %v", errtext.Quote(e.ID), e.Position, e.Problem, also, ErrInvalidMember)
}

// Unwrap returns ErrInvalidMember.
func (e *MemberError) Unwrap() error { return ErrInvalidMember }

// memberErr reports a problem with the member with the given ID at position pos.
func memberErr(id string, pos int, format string, args ...any) error {
	return &MemberError{Position: pos, ID: id, Problem: fmt.Sprintf(format, args...), DuplicateOf: -1}
}
