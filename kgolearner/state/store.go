package state

import (
	"bytes"
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
// changelog from Checkpoint().Changelog on.
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

// MarshalText encodes the checkpoint as "<changelog>" followed by
// ";<topic>=<offset>" per input topic in name order (Kafka topic names
// contain neither ';' nor '=').
func (cp Checkpoint) MarshalText() ([]byte, error) {
	var b strings.Builder
	b.WriteString(strconv.FormatInt(cp.Changelog, 10))
	for _, topic := range slices.Sorted(maps.Keys(cp.Input)) {
		fmt.Fprintf(&b, ";%s=%d", topic, cp.Input[topic])
	}
	return []byte(b.String()), nil
}

// UnmarshalText decodes what MarshalText encodes.
func (cp *Checkpoint) UnmarshalText(text []byte) error {
	parts := bytes.Split(text, []byte(";"))
	n, err := strconv.ParseInt(string(parts[0]), 10, 64)
	if err != nil || n < 0 {
		return fmt.Errorf("state: checkpoint %q: changelog offset %q is not a non-negative integer", text, parts[0])
	}
	input, err := parsePositions(parts[1:])
	if err != nil {
		return fmt.Errorf("state: checkpoint %q: %w", text, err)
	}
	*cp = Checkpoint{Changelog: n, Input: input}
	return nil
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
	h.m.cp = Checkpoint{Changelog: cp.Changelog, Input: maps.Clone(cp.Input)}
	return nil
}

func (h *memoryHandle) Checkpoint() (Checkpoint, error) {
	if h.closed {
		return Checkpoint{}, ErrClosed
	}
	h.m.mu.Lock()
	defer h.m.mu.Unlock()
	return Checkpoint{Changelog: h.m.cp.Changelog, Input: maps.Clone(h.m.cp.Input)}, nil
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
