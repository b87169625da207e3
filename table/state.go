package table

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/pqsink/pqsink/archive"
)

// Partition names one Kafka partition as read by one consumer group: the
// unit whose exactly-once state the table keeps.
type Partition struct {
	Group     string
	Topic     string
	Partition int32
}

// comparePartitions orders partitions by group, topic and number.
func comparePartitions(a, b Partition) int {
	return cmp.Or(strings.Compare(a.Group, b.Group), strings.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
}

// Progress is the exactly-once state of one Partition in the table:
// every record below Committed is in the table, and so is, for each path
// identity in Paths, the chain of that path up to the offset it maps to
// (the skip set of the Kafka commit metadata, see archive.EncodeCommit).
type Progress struct {
	Committed int64
	Paths     map[string]int64
	// SpecID is the id of the table's partition spec that the paths of
	// Paths follow: the one they were written by. Two specs may name
	// their folders alike (a field replaced under its name by another
	// transform), so a partition resuming from paths beyond Committed
	// needs it to write them by the same spec. nil when not known (a
	// state written by a pqsink that kept none, or paths whose specs
	// disagree), and always without paths: it is said of the paths only.
	SpecID *int
	// Index is the key index of an upsert table's partition as of
	// Committed: the store keys of its snapshots, a full one first and
	// the deltas after it (package table/keyindex). A new owner loads it
	// before consuming. nil for an append table, or an upsert table's
	// partition without a snapshot yet.
	Index []string
}

// specOfPaths is p.SpecID when p has paths, nil otherwise.
func (p Progress) specOfPaths() *int {
	if len(p.Paths) == 0 {
		return nil
	}
	return p.SpecID
}

// sameSpec reports whether a and b are the same known spec id.
func sameSpec(a, b *int) bool { return a != nil && b != nil && *a == *b }

// covered is the last offset of path id that the table holds.
func (p Progress) covered(id string) int64 {
	c := p.Committed - 1
	if o, ok := p.Paths[id]; ok && o > c {
		c = o
	}
	return c
}

// Merge returns the union of what p and q say is in the table: the later
// committed offset, the later offset of each path, and no path at or below
// the committed offset. Every claim of either is true once both commits
// landed, so the union is too. The union's paths follow the spec of the
// paths it keeps when those of p and q that it keeps agree on it, and an
// unknown one otherwise (Commit refuses to merge paths of two specs
// beyond the committed offset: specConflicts).
func (p Progress) Merge(q Progress) Progress {
	out := Progress{Committed: max(p.Committed, q.Committed), Paths: map[string]int64{}}
	var specs []*int
	for _, src := range []Progress{p, q} {
		kept := false
		for id, o := range src.Paths {
			if cur, ok := out.Paths[id]; o >= out.Committed && (!ok || o > cur) {
				out.Paths[id] = o
			}
			kept = kept || o >= out.Committed
		}
		if kept {
			specs = append(specs, src.SpecID)
		}
	}
	if len(specs) > 0 && (len(specs) == 1 || sameSpec(specs[0], specs[1])) {
		out.SpecID = specs[0]
	}
	// The key index is that of the later committed offset: an index
	// matches one offset, and is not merged. Of two at the same offset,
	// q's, the newer claim (either is the index of that offset).
	out.Index = p.Index
	if q.Committed > p.Committed || q.Committed == p.Committed && len(q.Index) > 0 {
		out.Index = q.Index
	}
	return out
}

// beyond is the last offset of p's paths that lie beyond its committed
// offset, and whether there is one.
func (p Progress) beyond() (int64, bool) {
	last, ok := int64(-1), false
	for _, o := range p.Paths {
		if o >= p.Committed {
			last, ok = max(last, o), true
		}
	}
	return last, ok
}

func (p Progress) equal(q Progress) bool {
	a, b := p.specOfPaths(), q.specOfPaths()
	return p.Committed == q.Committed && maps.Equal(p.Paths, q.Paths) && (a == nil) == (b == nil) && (a == nil || *a == *b) && slices.Equal(p.Index, q.Index)
}

// State is the exactly-once state a table holds: the Progress of every
// partition of every group that commits to it.
//
// The entries are kept per group, but what the table holds of a Kafka
// partition does not depend on which group wrote it: every decision
// (where to resume, which file the table holds already) reads the union
// of the groups' entries, As gives it. A renamed group thus resumes where
// the table is, and two groups reading one topic into one table append
// each record once.
type State map[Partition]Progress

// As is the state as group sees it: for every Kafka partition of which
// any group's entry says something, the Merge of every group's progress
// of it, keyed by group. Each claim of an entry is a claim on the table's
// contents, whoever made it, so the union is true as each of them is.
func (s State) As(group string) State {
	out := make(State, len(s))
	for k, p := range s {
		k.Group = group
		if c, ok := out[k]; ok {
			p = c.Merge(p)
		}
		out[k] = p
	}
	return out
}

// The snapshot summary entry that holds the State. Its value is
// archive.CommitInline followed by the JSON document, or, when that is
// longer than maxInlineState, archive.CommitState followed by the location
// of a state object holding the document, named by its content.
const (
	SummaryState   = "pqsink.state"
	maxInlineState = 4000
)

// stateDoc is the JSON form of a State: its partitions sorted by group,
// topic and partition, so that equal states are equal documents.
type stateDoc struct {
	Partitions []partitionDoc `json:"partitions"`
}

// partitionDoc is one partition's Progress. spec_id was added after the
// rest, and is left out when not known: a pqsink that does not know it
// reads the document as before (encoding/json passes over a field its
// struct lacks) and resumes by the folder names of the paths, as it
// always did; a pqsink that knows it reads a document without it as a
// state whose spec is not known, and resumes the same way.
type partitionDoc struct {
	Group     string           `json:"group"`
	Topic     string           `json:"topic"`
	Partition int32            `json:"partition"`
	Committed int64            `json:"committed"`
	Paths     map[string]int64 `json:"paths"`
	SpecID    *int             `json:"spec_id,omitempty"`
	// Index (Progress.Index) was added later, as spec_id was: left out
	// when there is none, and read as none from a document without it.
	Index []string `json:"index,omitempty"`
}

// encode renders s as its JSON document.
func (s State) encode() ([]byte, error) {
	keys := slices.SortedFunc(maps.Keys(s), comparePartitions)
	doc := stateDoc{Partitions: make([]partitionDoc, 0, len(keys))}
	for _, k := range keys {
		p := s[k]
		paths := p.Paths
		if paths == nil {
			paths = map[string]int64{}
		}
		doc.Partitions = append(doc.Partitions, partitionDoc{Group: k.Group, Topic: k.Topic, Partition: k.Partition, Committed: p.Committed, Paths: paths, SpecID: p.specOfPaths(), Index: p.Index})
	}
	return json.Marshal(doc)
}

// decodeState reads a State's JSON document.
func decodeState(b []byte) (State, error) {
	var doc stateDoc
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("table state is not pqsink's: %w", err)
	}
	s := State{}
	for _, p := range doc.Partitions {
		paths := p.Paths
		if paths == nil {
			paths = map[string]int64{}
		}
		s[Partition{p.Group, p.Topic, p.Partition}] = Progress{Committed: p.Committed, Paths: paths, SpecID: p.SpecID, Index: p.Index}
	}
	return s, nil
}

// summaryValue renders s for the summary entry. When the document is too
// long to inline, obj is the name of the state object to store first (a
// function of the document) and doc its content.
func summaryValue(s State) (value, obj string, doc []byte, err error) {
	doc, err = s.encode()
	if err != nil {
		return "", "", nil, err
	}
	if len(archive.CommitInline)+len(doc) <= maxInlineState {
		return archive.CommitInline + string(doc), "", nil, nil
	}
	sum := sha256.Sum256(doc)
	obj = hex.EncodeToString(sum[:16]) + ".json"
	return archive.CommitState + obj, obj, doc, nil
}
