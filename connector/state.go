package connector

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sort"

	"github.com/pqsink/pqsink/archive"
	"github.com/pqsink/pqsink/objstore"
)

// The commit metadata of a partition tells the next owner which records
// beyond the committed offset are already in uploaded files: for each path
// identity with such a file, the offset of the last record uploaded. The
// next owner consumes again from the committed offset and skips, per path,
// the records up to that offset (the skip set). Its format, inline or in a
// state object when too long for the broker, is archive's (EncodeCommit).

// skipSet maps a path identity to the offset of the last record of that
// path already uploaded.
type skipSet map[string]int64

// prune drops the entries that the committed offset makes moot: every
// record at or below such an entry's offset is below the committed one.
func (s skipSet) prune(committed int64) {
	for id, last := range s {
		if last < committed {
			delete(s, id)
		}
	}
}

// extend records that the records of path id up to offset last are
// already uploaded, unless the set says so of more.
func (s skipSet) extend(id string, last int64) {
	if prev, ok := s[id]; !ok || last > prev {
		s[id] = last
	}
}

// skips says whether the record of path id at offset is already uploaded.
func (s skipSet) skips(id []byte, offset int64) bool {
	last, ok := s[string(id)]
	return ok && offset <= last
}

// paths returns a copy of the skip set's object paths, the dead letters'
// entry left out: what a table's views are matched against.
func (s skipSet) paths() map[string]int64 {
	out := make(map[string]int64, len(s))
	for id, last := range s {
		if id != deadLetterID {
			out[id] = last
		}
	}
	return out
}

// encodeMetadata renders the skip set of a partition as commit metadata,
// storing it as an object when it is too long to commit inline. The object
// key is a function of its content, so writing it twice is harmless.
func encodeMetadata(ctx context.Context, store objstore.Store, group, topic string, partition int32, committed int64, s skipSet) (string, error) {
	md, key, doc, err := archive.EncodeCommit(group, topic, partition, committed, s)
	if err != nil || key == "" {
		return md, err
	}
	_, err = objstore.Put(ctx, store, key, bytes.NewReader(doc), objstore.ContentType("application/json"))
	if err != nil && !errors.Is(err, objstore.ErrExists) {
		return "", fmt.Errorf("writing commit state %s: %w", key, err)
	}
	return md, nil
}

// decodeMetadata reads back what encodeMetadata wrote. Metadata that some
// other tool committed (not ours) yields an empty skip set.
func decodeMetadata(ctx context.Context, store objstore.Store, md string) (skipSet, error) {
	s, key, err := archive.DecodeCommit(md)
	if err != nil {
		return nil, err
	}
	if key == "" {
		return skipSet(s), nil
	}
	r, _, err := store.Get(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("reading commit state %s: %w", key, err)
	}
	doc, err := io.ReadAll(io.LimitReader(r, 64<<20))
	r.Close()
	if err != nil {
		return nil, fmt.Errorf("reading commit state %s: %w", key, err)
	}
	if s, err = archive.DecodeState(doc); err != nil {
		return nil, err
	}
	return skipSet(s), nil
}

// escapeSegment makes a group or topic name one safe key segment.
func escapeSegment(s string) string { return archive.Escape(s) }

// sortedIDs returns the skip set's identities in order, for logs.
func (s skipSet) sortedIDs() []string {
	ids := make([]string, 0, len(s))
	for id := range s {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}
