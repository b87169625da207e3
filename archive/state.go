package archive

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
)

// Prefixes of pqsink's own objects in the store, beside the files. Replay
// never reads an object under InternalPrefix as a file.
const (
	// InternalPrefix holds every object of pqsink's own.
	InternalPrefix = "_pqsink/"
	// StatePrefix holds the commit state objects (see EncodeCommit).
	StatePrefix = InternalPrefix + "state/"
	// ReplayPrefix holds replay's store checkpoints, one folder per name.
	ReplayPrefix = InternalPrefix + "replay/"
	// ProbeKey is the key the sink's readiness check asks the store
	// about (a HEAD); the object need not exist.
	ProbeKey = InternalPrefix + "probe"
)

// The commit metadata of a partition tells the next owner which records
// beyond the committed offset are already in uploaded files: for each path
// identity with such a file, the offset of the last record uploaded (the
// skip set). It is the JSON document {"paths":{ID:OFFSET,...}}, committed
// after CommitInline, or, when too long for the broker, stored as a state
// object whose key is committed after CommitState.
//
// Brokers cap commit metadata (offset.metadata.max.bytes, 4096 bytes by
// default), which maxInline stays under.
const (
	CommitInline = "pqsink1:"
	CommitState  = "pqsink1@"
	maxInline    = 4000
)

// stateDoc is the JSON form of a skip set.
type stateDoc struct {
	Paths map[string]int64 `json:"paths"`
}

// EncodeCommit renders the skip set of topic[partition], committed at
// offset committed by group, as commit metadata. When it is too long to
// commit inline, md names a state object, and key and doc are the object's
// key and content, which must be stored before md is committed; key is ""
// otherwise. The key is a function of the content, so storing it twice is
// harmless. An empty set is empty metadata.
func EncodeCommit(group, topic string, partition int32, committed int64, skips map[string]int64) (md, key string, doc []byte, err error) {
	if len(skips) == 0 {
		return "", "", nil, nil
	}
	doc, err = json.Marshal(stateDoc{Paths: skips})
	if err != nil {
		return "", "", nil, err
	}
	if len(CommitInline)+len(doc) <= maxInline {
		return CommitInline + string(doc), "", nil, nil
	}
	sum := sha256.Sum256(doc)
	key = fmt.Sprintf("%s%s/%s/%d/%020d-%s.json", StatePrefix, Escape(group), Escape(topic), partition, committed, hex.EncodeToString(sum[:8]))
	return CommitState + key, key, doc, nil
}

// DecodeCommit reads back what EncodeCommit wrote. Metadata that names a
// state object gives its key and no skip set: the caller reads the object
// and decodes it with DecodeState. Metadata that some other tool committed
// (not pqsink's) yields an empty skip set.
func DecodeCommit(md string) (skips map[string]int64, key string, err error) {
	switch {
	case strings.HasPrefix(md, CommitInline):
		skips, err = DecodeState([]byte(md[len(CommitInline):]))
		return skips, "", err
	case strings.HasPrefix(md, CommitState):
		return nil, md[len(CommitState):], nil
	}
	return map[string]int64{}, "", nil
}

// DecodeState reads the skip set of a commit: the inline document, or the
// content of its state object.
func DecodeState(doc []byte) (map[string]int64, error) {
	var d stateDoc
	if err := json.Unmarshal(doc, &d); err != nil {
		return nil, fmt.Errorf("commit metadata is not pqsink's: %w", err)
	}
	if d.Paths == nil {
		return map[string]int64{}, nil
	}
	return d.Paths, nil
}
