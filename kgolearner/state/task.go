package state

import (
	"sync"
	"sync/atomic"
	"time"
)

// role is what the member does with a task.
type role int

const (
	roleNone    role = iota // no role; the store, if open, stays for later
	roleActive              // active: restoring the rest (activating), then running
	roleLearner             // replaying beside the owner, to take the task over
	roleStandby             // replaying beside the owner, to take over after a crash
)

// task is the member's state of one task.
type task struct {
	id          string
	stateful    bool
	partition   int32
	changelog   string             // changelog topic (stateful tasks)
	changelogID [16]byte           // its topic ID, listed as Run started; zero if unknown
	inputs      map[string][]int32 // input topic -> the task's partition

	// Guarded by Runtime.mu.
	role        role
	running     bool      // active and caught up: its input is processed
	busy        bool      // in the batch the poll loop is writing
	consuming   bool      // its changelog partition is in the restore client
	end         int64     // changelog end offset, as last listed
	endAt       time.Time // when end was listed
	activatedAt time.Time // when it last became active
	ready       bool      // Ready reported in this learning session
	replayed    int64     // changelog records restored since activatedAt
	caughtUp    bool      // activating and restored up to an end listed after activatedAt
	opened      bool      // store is open
	restored    int64     // the store's checkpoint: next changelog offset

	// applyMu guards the store, cp and pos: the restore loop and the poll
	// loop both write the store.
	applyMu sync.Mutex
	store   Store
	cp      Checkpoint
	pos     map[string]int64 // next input offset to process, by topic (running tasks)
	// pending holds the changes of the last input record restored whose
	// changelog records the changelog lacks (its writer stopped in the
	// middle; see groupHeader), at position pendingPos from offset
	// pendingFrom. The store holds them; the store's checkpoint stays at
	// pendingFrom until Runtime.complete writes them, so that a restart
	// reads the group's first record again.
	pending     []Change
	pendingPos  []byte
	pendingFrom int64
	groupKeys   [][]byte // every key of pending's group, the first record's too (track)
	resetAt     uint64   // Runtime.resets after the store's last reset

	stops atomic.Uint64 // StopActive calls so far (see Runtime.commitQueued)
}

// restoring reports whether the restore client should consume the task's
// changelog partition.
func (t *task) restoring() bool {
	return t.stateful && t.opened && (t.role == roleLearner || t.role == roleStandby || (t.role == roleActive && !t.running))
}

// activatedUnlisted reports whether the task became active and the lag loop
// has not listed its changelog's end since (it lists a task that is not
// running; a task runs once restored up to an end listed after it became
// active, so such a task never ran). Guarded by Runtime.mu.
func (t *task) activatedUnlisted() bool { return t.endAt.Before(t.activatedAt) }

// checkpoint returns the checkpoint of a store that reaches changelog and
// input, in the changelog topic the task writes and restores.
func (t *task) checkpoint(changelog int64, input map[string]int64) Checkpoint {
	return Checkpoint{Changelog: changelog, Input: input, ChangelogID: t.changelogID}
}
