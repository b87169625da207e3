package source

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/pqsink/pqsink/objstore"
)

// Checkpoint is the state of a replay: per source partition, the last
// record produced and acknowledged. It is what --checkpoint files and
// store checkpoints hold, as JSON.
type Checkpoint struct {
	// Version is the format's version, 1.
	Version int `json:"version"`
	// From, Topic and Filter identify the replay; a checkpoint is only
	// resumed by the same one.
	From   string `json:"from"`
	Topic  string `json:"topic"`
	Filter string `json:"filter"`
	// Partitions holds the position of each source partition, by
	// "topic/partition".
	Partitions map[string]Position `json:"partitions"`
	// Records counts the records produced, over every run.
	Records int64 `json:"records"`
	// Complete is set when a run went through every matching record.
	Complete bool `json:"complete"`
}

// Position is the last record of a source partition that was produced:
// its object, its row in that object and its offset.
type Position struct {
	Object string `json:"object"`
	Row    int64  `json:"row"`
	Offset int64  `json:"offset"`
}

// checkpointer loads and saves a Checkpoint.
type checkpointer interface {
	load(ctx context.Context) (*Checkpoint, error) // nil when there is none
	save(ctx context.Context, c *Checkpoint) error
	String() string
}

// fileCheckpoint keeps the checkpoint in a local file, replaced atomically.
type fileCheckpoint struct{ path string }

func (f fileCheckpoint) String() string { return f.path }

func (f fileCheckpoint) load(context.Context) (*Checkpoint, error) {
	data, err := os.ReadFile(f.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	return decodeCheckpoint(data, f.path)
}

func (f fileCheckpoint) save(_ context.Context, c *Checkpoint) error {
	data, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(f.path), "."+filepath.Base(f.path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	_, err = tmp.Write(append(data, '\n'))
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), f.path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("checkpoint %s: %w", f.path, err)
	}
	return nil
}

// storeCheckpoint keeps the checkpoint in the store, whose objects are
// immutable: each save creates _pqsink/replay/<name>/<sequence>.json, and
// the highest sequence is the checkpoint; older ones are deleted.
type storeCheckpoint struct {
	store objstore.Store
	dir   string // "_pqsink/replay/<name>/"
	seq   int64  // of the last object read or written
}

func (s *storeCheckpoint) String() string { return s.dir }

func (s *storeCheckpoint) load(ctx context.Context) (*Checkpoint, error) {
	var last string
	for info, err := range s.store.List(ctx, s.dir) {
		if err != nil {
			return nil, fmt.Errorf("checkpoint: listing %s: %w", s.dir, err)
		}
		if strings.HasSuffix(info.Key, ".json") && info.Key > last {
			last = info.Key
		}
	}
	if last == "" {
		return nil, nil
	}
	if _, err := fmt.Sscanf(strings.TrimPrefix(last, s.dir), "%020d.json", &s.seq); err != nil {
		return nil, fmt.Errorf("checkpoint %s: not a checkpoint object", last)
	}
	r, _, err := s.store.Get(ctx, last)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	defer r.Close()
	data, err := io.ReadAll(io.LimitReader(r, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", last, err)
	}
	return decodeCheckpoint(data, last)
}

func (s *storeCheckpoint) save(ctx context.Context, c *Checkpoint) error {
	data, err := json.Marshal(c)
	if err != nil {
		return err
	}
	prev := s.seq
	key := fmt.Sprintf("%s%020d.json", s.dir, prev+1)
	if _, err := objstore.Put(ctx, s.store, key, bytes.NewReader(data), objstore.ContentType("application/json")); err != nil {
		return fmt.Errorf("checkpoint %s: %w", key, err)
	}
	s.seq = prev + 1
	if prev > 0 {
		// The new one is durable; the old one is garbage. A failure here
		// leaves an older checkpoint that load never picks.
		_ = s.store.Delete(ctx, fmt.Sprintf("%s%020d.json", s.dir, prev))
	}
	return nil
}

func decodeCheckpoint(data []byte, where string) (*Checkpoint, error) {
	var c Checkpoint
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", where, err)
	}
	if c.Version != 1 {
		return nil, fmt.Errorf("checkpoint %s: version %d, want 1", where, c.Version)
	}
	if c.Partitions == nil {
		c.Partitions = map[string]Position{}
	}
	return &c, nil
}
