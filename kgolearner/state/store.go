package state

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Store is a task's local key-value state. The runtime owns a task's store
// from Open to Close and never calls it from two goroutines at once.
//
// A store holds a prefix of its changelog: Apply writes a batch of changes
// together with the Checkpoint they reach, atomically, so that after a crash
// the data and the checkpoint still agree and the runtime replays only the
// changelog from Checkpoint().Changelog on (all of it if the changelog
// topic was recreated since: Checkpoint.ChangelogID).
type Store interface {
	// Get returns the value of key; ok is false when the key is absent.
	// The value is the caller's to keep and change: the store's data must
	// not change with it.
	Get(key []byte) (value []byte, ok bool, err error)
	// Apply writes changes in order and records cp, all or nothing.
	Apply(changes []Change, cp Checkpoint) error
	// Checkpoint returns the checkpoint of the last Apply, or the zero
	// Checkpoint for an empty store. Run refuses one with a negative
	// offset (ErrStore).
	Checkpoint() (Checkpoint, error)
	// Clear drops every key and the checkpoint: the runtime restores the
	// task from the start of its changelog.
	Clear() error
	// Close releases the store; its data stays where the Stores keep it.
	Close() error
}

// Stores opens the stores of one member's tasks.
type Stores interface {
	// Open opens (creating it if needed) the store of task.
	Open(task string) (Store, error)
	// Local lists, in any order, the tasks with state kept from an earlier
	// run: the runtime opens them at start and reports their lag at its
	// first join, so the leader prefers this member for them.
	Local() ([]string, error)
}

// Change is one write to a store: Value nil deletes Key.
type Change struct {
	Key, Value []byte
}

// Checkpoint is how far a store reflects its changelog and the task's input.
type Checkpoint struct {
	// Changelog is the next changelog offset to apply: every record before
	// it is in the store. Zero for an empty store.
	Changelog int64
	// Input holds, by input topic, the next offset of the task's partition
	// whose effects are not in the store. A promoted or restarted task
	// skips input records below it: their effects are already in its state.
	Input map[string]int64
	// ChangelogID is the topic ID of the changelog topic the store's
	// records come from, as the brokers listed it when Run started. A
	// topic deleted and recreated under the same name gets a new ID, and
	// its offsets restart at zero: Run clears a store of another ID and
	// restores it from the new topic's start, as it does a store whose
	// changelog lost the records after its checkpoint; a topic recreated
	// while Run runs stops it (ErrChangelogTopic). Zero when unknown:
	// a checkpoint written before the runtime recorded the ID, or under
	// brokers that list no topic IDs (before Kafka 2.8). Such a store is
	// used as it is (nothing tells its topic from a recreated one), and
	// its next Apply records the ID then known. A Store keeps it with the
	// rest of the checkpoint (MarshalText encodes it).
	ChangelogID [16]byte
}

// check refuses a checkpoint with a negative offset, which a Store may
// return: kgo reads a changelog offset of -1 as the changelog's end, so
// the task would restore nothing, and an input offset below zero is no
// position.
func (cp Checkpoint) check() error {
	if cp.Changelog < 0 {
		return fmt.Errorf("changelog offset %d is negative", cp.Changelog)
	}
	for _, topic := range slices.Sorted(maps.Keys(cp.Input)) {
		if cp.Input[topic] < 0 {
			return fmt.Errorf("offset %d of input topic %s is negative", cp.Input[topic], topic)
		}
	}
	return nil
}

// MarshalText encodes the checkpoint as "<changelog>", then
// "@<changelog ID>" unless the ID is zero, then ";<topic>=<offset>" per
// input topic in name order. The ID is written as Kafka's tools write
// topic IDs (22 characters of unpadded URL-safe base64), and Kafka topic
// names contain none of ';', '=' and '@'. Versions of the runtime before
// ChangelogID refuse a text with an ID.
func (cp Checkpoint) MarshalText() ([]byte, error) {
	var b strings.Builder
	b.WriteString(strconv.FormatInt(cp.Changelog, 10))
	if cp.ChangelogID != noTopicID {
		b.WriteString("@" + formatTopicID(cp.ChangelogID))
	}
	for _, topic := range slices.Sorted(maps.Keys(cp.Input)) {
		fmt.Fprintf(&b, ";%s=%d", topic, cp.Input[topic])
	}
	return []byte(b.String()), nil
}

// UnmarshalText decodes what MarshalText encodes, including the text of
// versions that did not record the changelog's ID (no "@<changelog ID>"),
// which gives a zero ChangelogID.
func (cp *Checkpoint) UnmarshalText(text []byte) error {
	parts := bytes.Split(text, []byte(";"))
	changelog, id, hasID := bytes.Cut(parts[0], []byte("@"))
	n, ok := parseOffset(changelog)
	if !ok {
		return fmt.Errorf("state: checkpoint %q: changelog offset %q is not a non-negative integer", text, changelog)
	}
	var topicID [16]byte
	if hasID {
		if topicID, ok = parseTopicID(id); !ok {
			return fmt.Errorf("state: checkpoint %q: changelog ID %q is not a topic ID (22 characters of URL-safe base64, not all zero)", text, id)
		}
	}
	input, err := parsePositions(parts[1:])
	if err != nil {
		return fmt.Errorf("state: checkpoint %q: %w", text, err)
	}
	*cp = Checkpoint{Changelog: n, Input: input, ChangelogID: topicID}
	return nil
}

// noTopicID is the zero topic ID: unknown (Kafka never gives it to a
// topic).
var noTopicID [16]byte

// formatTopicID writes a topic ID as Kafka does (Uuid.toString): URL-safe
// base64 without padding.
func formatTopicID(id [16]byte) string { return base64.RawURLEncoding.EncodeToString(id[:]) }

// parseTopicID parses what formatTopicID writes, but the zero ID, which
// it never writes: exactly 22 characters whose unused last bits are zero,
// so that every ID has one text.
func parseTopicID(b []byte) ([16]byte, bool) {
	var id [16]byte
	if len(b) != base64.RawURLEncoding.EncodedLen(len(id)) {
		return noTopicID, false
	}
	if n, err := base64.RawURLEncoding.Strict().Decode(id[:], b); err != nil || n != len(id) || id == noTopicID {
		return noTopicID, false
	}
	return id, true
}

// parsePositions decodes "<topic>=<offset>" items.
func parsePositions(items [][]byte) (map[string]int64, error) {
	if len(items) == 0 {
		return nil, nil
	}
	out := make(map[string]int64, len(items))
	for _, item := range items {
		topic, off, ok := bytes.Cut(item, []byte("="))
		n, isOffset := parseOffset(off)
		if !ok || len(topic) == 0 || !isOffset {
			return nil, fmt.Errorf("input position %q is not <topic>=<offset>", item)
		}
		out[string(topic)] = n
	}
	return out, nil
}

// parseOffset parses an offset as strconv.AppendInt writes a
// non-negative one: decimal digits only, no sign, fitting an int64.
func parseOffset(b []byte) (int64, bool) {
	if len(b) == 0 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		d := int64(c - '0')
		if c < '0' || c > '9' || n > (math.MaxInt64-d)/10 {
			return 0, false
		}
		n = n*10 + d
	}
	return n, true
}

// ErrClosed is returned by a store used after Close.
var ErrClosed = errors.New("state: store closed")

// MemoryStores keeps every store in memory: state lives as long as the
// process, so a restarted member restores its tasks from their changelogs.
// The zero value is ready to use.
type MemoryStores struct {
	mu     sync.Mutex
	stores map[string]*memoryStore
}

// Open implements Stores. Reopening a task's store in the same
// MemoryStores finds the data it held when closed.
func (s *MemoryStores) Open(task string) (Store, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stores == nil {
		s.stores = map[string]*memoryStore{}
	}
	m := s.stores[task]
	if m == nil {
		m = &memoryStore{data: map[string][]byte{}}
		s.stores[task] = m
	}
	return &memoryHandle{m: m}, nil
}

// Local implements Stores: the tasks opened before.
func (s *MemoryStores) Local() ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Sorted(maps.Keys(s.stores)), nil
}

type memoryStore struct {
	mu   sync.Mutex
	data map[string][]byte
	cp   Checkpoint
}

// memoryHandle is one Open of a memoryStore, so that Close ends only it.
type memoryHandle struct {
	m      *memoryStore
	closed bool
}

func (h *memoryHandle) Get(key []byte) ([]byte, bool, error) {
	if h.closed {
		return nil, false, ErrClosed
	}
	h.m.mu.Lock()
	defer h.m.mu.Unlock()
	v, ok := h.m.data[string(key)]
	return slices.Clone(v), ok, nil
}

func (h *memoryHandle) Apply(changes []Change, cp Checkpoint) error {
	if h.closed {
		return ErrClosed
	}
	h.m.mu.Lock()
	defer h.m.mu.Unlock()
	for _, c := range changes {
		if c.Value == nil {
			delete(h.m.data, string(c.Key))
		} else {
			h.m.data[string(c.Key)] = slices.Clone(c.Value)
		}
	}
	h.m.cp = cp
	h.m.cp.Input = maps.Clone(cp.Input)
	return nil
}

func (h *memoryHandle) Checkpoint() (Checkpoint, error) {
	if h.closed {
		return Checkpoint{}, ErrClosed
	}
	h.m.mu.Lock()
	defer h.m.mu.Unlock()
	cp := h.m.cp
	cp.Input = maps.Clone(cp.Input)
	return cp, nil
}

func (h *memoryHandle) Clear() error {
	if h.closed {
		return ErrClosed
	}
	h.m.mu.Lock()
	defer h.m.mu.Unlock()
	clear(h.m.data)
	h.m.cp = Checkpoint{}
	return nil
}

func (h *memoryHandle) Close() error {
	h.closed = true
	return nil
}
