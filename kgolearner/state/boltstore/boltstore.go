// Package boltstore keeps the state runtime's stores on disk with bbolt
// (go.etcd.io/bbolt), one file per task.
//
// bbolt is a pure-Go B+tree with serializable transactions: a store's Apply
// writes its changes and its checkpoint in one transaction, so the file
// always holds a prefix of the changelog and the offset it reaches, and a
// member restarted on the same disk replays only the rest. It was chosen
// over Pebble for its size (one package and golang.org/x/sys), its stable
// file format and that atomicity for free; Pebble's LSM tree writes faster
// under heavy random updates, which a per-task store fed in batches does
// not need.
package boltstore

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/learnerassignor/learner/kgolearner/state"
	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

var (
	dataBucket    = []byte("data")
	metaBucket    = []byte("meta")
	checkpointKey = []byte("checkpoint")
)

const suffix = ".db"

// errNoDir is the error of Stores without a Dir, which os reports as
// "mkdir : no such file or directory".
var errNoDir = errors.New("boltstore: Stores.Dir is empty")

// Stores keeps one bbolt file per task in Dir.
type Stores struct {
	// Dir is the directory of the files; it is created if missing. It
	// must be set: Open and Local refuse an empty one.
	Dir string
	// Sync makes every Apply fsync. Without it (the default) a process
	// crash loses nothing, since the pages are in the OS's cache, but a
	// machine crash may lose the last writes or, rarely, leave a file
	// bbolt cannot open: its task then restores from the changelog once
	// the file is removed.
	Sync bool
}

// Open implements state.Stores. A file another process holds open fails
// after a second, naming the file.
func (s Stores) Open(task string) (state.Store, error) {
	if s.Dir == "" {
		return nil, errNoDir
	}
	if task == "" || strings.ContainsAny(task, `/\`) || strings.HasPrefix(task, ".") {
		return nil, fmt.Errorf("boltstore: task %q is not a file name", task)
	}
	if err := os.MkdirAll(s.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("boltstore: %w", err)
	}
	path := filepath.Join(s.Dir, task+suffix)
	db, err := bolt.Open(path, 0o644, &bolt.Options{Timeout: time.Second, NoSync: !s.Sync, NoFreelistSync: true})
	if err != nil {
		if errors.Is(err, bolterrors.ErrTimeout) {
			err = fmt.Errorf("locked by another process: %w", err)
		}
		return nil, fmt.Errorf("boltstore: open %s: %w", path, err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		if _, err := tx.CreateBucketIfNotExists(dataBucket); err != nil {
			return err
		}
		_, err := tx.CreateBucketIfNotExists(metaBucket)
		return err
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("boltstore: open %s: %w", path, err)
	}
	return &store{db: db, path: path}, nil
}

// Local implements state.Stores: the tasks with a file in Dir.
func (s Stores) Local() ([]string, error) {
	if s.Dir == "" {
		return nil, errNoDir
	}
	entries, err := os.ReadDir(s.Dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("boltstore: %w", err)
	}
	var out []string
	for _, e := range entries {
		if name, ok := strings.CutSuffix(e.Name(), suffix); ok && !e.IsDir() {
			out = append(out, name)
		}
	}
	return out, nil
}

type store struct {
	db   *bolt.DB
	path string
}

func (s *store) Get(key []byte) (value []byte, ok bool, err error) {
	err = s.db.View(func(tx *bolt.Tx) error {
		if v := tx.Bucket(dataBucket).Get(key); v != nil {
			value, ok = append([]byte{}, v...), true // v lives only in the transaction
		}
		return nil
	})
	if err != nil {
		return nil, false, fmt.Errorf("boltstore: %s: %w", s.path, err)
	}
	return value, ok, nil
}

func (s *store) Apply(changes []state.Change, cp state.Checkpoint) error {
	text, err := cp.MarshalText()
	if err != nil {
		return err
	}
	err = s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(dataBucket)
		for _, c := range changes {
			var err error
			if c.Value == nil {
				err = b.Delete(c.Key)
			} else {
				err = b.Put(c.Key, c.Value)
			}
			if err != nil {
				return fmt.Errorf("key %q: %w", c.Key, err)
			}
		}
		return tx.Bucket(metaBucket).Put(checkpointKey, text)
	})
	if err != nil {
		return fmt.Errorf("boltstore: %s: %w", s.path, err)
	}
	return nil
}

func (s *store) Checkpoint() (state.Checkpoint, error) {
	var cp state.Checkpoint
	err := s.db.View(func(tx *bolt.Tx) error {
		if v := tx.Bucket(metaBucket).Get(checkpointKey); v != nil {
			return cp.UnmarshalText(v)
		}
		return nil
	})
	if err != nil {
		return state.Checkpoint{}, fmt.Errorf("boltstore: %s: %w", s.path, err)
	}
	return cp, nil
}

func (s *store) Clear() error {
	err := s.db.Update(func(tx *bolt.Tx) error {
		for _, name := range [][]byte{dataBucket, metaBucket} {
			if err := tx.DeleteBucket(name); err != nil {
				return err
			}
			if _, err := tx.CreateBucket(name); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("boltstore: %s: %w", s.path, err)
	}
	return nil
}

func (s *store) Close() error {
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("boltstore: %s: %w", s.path, err)
	}
	return nil
}
