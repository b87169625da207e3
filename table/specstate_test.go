package table

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/pqsink/pqsink/archive"
	"github.com/pqsink/pqsink/config"
)

func specPtr(id int) *int { return &id }

// testFile is a file of a commit in TestSpecConflicts: its Kafka range,
// path and spec.
type testFile struct {
	first, last int64
	partition   int32
	path        string
	spec        *int
}

// TestStateSpecIDRoundTrip: a partition's spec id goes into the state
// document with its paths and comes back; a state without one (as every
// pqsink wrote before spec ids were kept) reads back without one, and is
// rendered as before, byte for byte; a spec id without paths is not
// written (it is said of the paths); and a reader that does not know the
// field, as an older pqsink's, reads a document with it as the same
// committed offsets and paths.
func TestStateSpecIDRoundTrip(t *testing.T) {
	k := Partition{"g", "events", 3}
	for _, c := range []struct {
		name    string
		state   State
		doc     string // the document encode must render
		specOut *int   // the spec id read back
	}{
		{"no spec id", State{k: {Committed: 10, Paths: map[string]int64{"id_bucket=3/": 25}}},
			`{"partitions":[{"group":"g","topic":"events","partition":3,"committed":10,"paths":{"id_bucket=3/":25}}]}`, nil},
		{"spec id", State{k: {Committed: 10, Paths: map[string]int64{"id_bucket=3/": 25}, SpecID: specPtr(1)}},
			`{"partitions":[{"group":"g","topic":"events","partition":3,"committed":10,"paths":{"id_bucket=3/":25},"spec_id":1}]}`, specPtr(1)},
		{"spec id 0", State{k: {Committed: 10, Paths: map[string]int64{"id_bucket=3/": 25}, SpecID: specPtr(0)}},
			`{"partitions":[{"group":"g","topic":"events","partition":3,"committed":10,"paths":{"id_bucket=3/":25},"spec_id":0}]}`, specPtr(0)},
		{"spec id without paths", State{k: {Committed: 10, SpecID: specPtr(2)}},
			`{"partitions":[{"group":"g","topic":"events","partition":3,"committed":10,"paths":{}}]}`, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			doc, err := c.state.encode()
			if err != nil {
				t.Fatal(err)
			}
			if string(doc) != c.doc {
				t.Errorf("document:\n%s\nwant\n%s", doc, c.doc)
			}
			back, err := decodeState(doc)
			if err != nil {
				t.Fatal(err)
			}
			if !equalState(back, c.state) {
				t.Errorf("read back %+v, want %+v", back, c.state)
			}
			got := back[k].specOfPaths()
			if (got == nil) != (c.specOut == nil) || (got != nil && *got != *c.specOut) {
				t.Errorf("spec id read back %v, want %v", deref(got), deref(c.specOut))
			}
			// An older pqsink's reader: the fields it knows, and nothing
			// else, as encoding/json decodes into its struct.
			var old struct {
				Partitions []struct {
					Group     string           `json:"group"`
					Topic     string           `json:"topic"`
					Partition int32            `json:"partition"`
					Committed int64            `json:"committed"`
					Paths     map[string]int64 `json:"paths"`
				} `json:"partitions"`
			}
			if err := json.Unmarshal(doc, &old); err != nil {
				t.Fatalf("an older reader: %v", err)
			}
			if len(old.Partitions) != 1 || old.Partitions[0].Committed != 10 || len(old.Partitions[0].Paths) != len(c.state[k].Paths) {
				t.Errorf("an older reader read %+v", old.Partitions)
			}
		})
	}
}

func deref(p *int) any {
	if p == nil {
		return nil
	}
	return *p
}

// TestProgressMergeSpec: the merged paths keep the spec of the side whose
// paths stay beyond the merged committed offset; paths of two known specs
// both kept, or of a known and an unknown one, have no known spec; none
// kept, none. Merging is symmetric.
func TestProgressMergeSpec(t *testing.T) {
	for _, c := range []struct {
		name string
		a, b Progress
		want *int
	}{
		{"same spec", Progress{Committed: 5, Paths: map[string]int64{"x": 9}, SpecID: specPtr(1)}, Progress{Committed: 6, Paths: map[string]int64{"y": 20}, SpecID: specPtr(1)}, specPtr(1)},
		{"moved at a clean point", Progress{Committed: 5, Paths: map[string]int64{"x": 9}, SpecID: specPtr(0)}, Progress{Committed: 12, Paths: map[string]int64{"x": 20}, SpecID: specPtr(1)}, specPtr(1)},
		{"the old spec's paths stay", Progress{Committed: 5, Paths: map[string]int64{"x": 9}, SpecID: specPtr(0)}, Progress{Committed: 7}, specPtr(0)},
		{"two specs kept", Progress{Committed: 5, Paths: map[string]int64{"x": 9}, SpecID: specPtr(0)}, Progress{Committed: 6, Paths: map[string]int64{"y": 20}, SpecID: specPtr(1)}, nil},
		{"a known and an unknown", Progress{Committed: 5, Paths: map[string]int64{"x": 9}, SpecID: specPtr(0)}, Progress{Committed: 6, Paths: map[string]int64{"y": 20}}, nil},
		{"no paths kept", Progress{Committed: 5, Paths: map[string]int64{"x": 9}, SpecID: specPtr(0)}, Progress{Committed: 12, SpecID: specPtr(1)}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, got := range []Progress{c.a.Merge(c.b), c.b.Merge(c.a)} {
				s := got.specOfPaths()
				if (s == nil) != (c.want == nil) || (s != nil && *s != *c.want) {
					t.Errorf("merge %+v: spec %v, want %v", got, deref(s), deref(c.want))
				}
			}
		})
	}
}

// TestSpecConflicts: a commit whose files or paths are of another spec
// than the paths the table holds beyond a partition's committed offset is
// refused for that partition when it could put a record in the table
// twice, and passes when the partition moved at a clean point, when the
// table's spec is not known (a state of an older pqsink), or when its
// files have none.
func TestSpecConflicts(t *testing.T) {
	k := Partition{"g", "events", 0}
	other := Partition{"g", "events", 1}
	table := State{
		k:     {Committed: 10, Paths: map[string]int64{"id_bucket=3/": 25, "id_bucket=5/": 18}, SpecID: specPtr(0)},
		other: {Committed: 10, Paths: map[string]int64{"id_bucket=3/": 25}},
	}
	file := func(partition int32, first, last int64, path string, spec *int) (File, archive.Range) {
		return File{PathID: path, SpecID: spec}, archive.Range{Topic: "events", Partition: partition, First: first, Last: last}
	}
	for _, c := range []struct {
		name  string
		files []testFile
		state State
		want  []Partition
	}{
		{name: "same spec", files: []testFile{{12, 20, 0, "id_bucket=4/", specPtr(0)}}, state: State{k: {Committed: 12, Paths: map[string]int64{"id_bucket=4/": 20}, SpecID: specPtr(0)}}},
		{name: "a fenced-off member's file of the new spec amid the old one's paths", files: []testFile{{12, 20, 0, "id_bucket=4/", specPtr(1)}}, want: []Partition{k}},
		{name: "like-named folders of another spec", files: []testFile{{19, 30, 0, "id_bucket=5/", specPtr(1)}}, want: []Partition{k}},
		{name: "a file of the new spec after the old one's paths, from a clean point", files: []testFile{{26, 30, 0, "id_bucket=4/", specPtr(1)}}, state: State{k: {Committed: 26, Paths: map[string]int64{"id_bucket=4/": 30}, SpecID: specPtr(1)}}},
		{name: "paths of the new spec beside the old one's", state: State{k: {Committed: 12, Paths: map[string]int64{"id_bucket=4/": 30}, SpecID: specPtr(1)}}, want: []Partition{k}},
		{name: "a file the table covers", files: []testFile{{3, 9, 0, "id_bucket=4/", specPtr(1)}}},
		{name: "the table's spec not known", files: []testFile{{12, 20, 1, "id_bucket=4/", specPtr(1)}}, state: State{other: {Committed: 12, Paths: map[string]int64{"id_bucket=4/": 30}, SpecID: specPtr(1)}}},
		{name: "a file without spec", files: []testFile{{12, 20, 0, "id_bucket=4/", nil}}},
		{name: "a file straddling the committed offset, no spec in the table", files: []testFile{{5, 20, 1, "id_bucket=4/", specPtr(1)}}, want: []Partition{other}},
		{name: "a file straddling its path's offset", files: []testFile{{20, 30, 1, "id_bucket=3/", specPtr(1)}}, want: []Partition{other}},
		{name: "a file straddling the committed offset, without spec", files: []testFile{{5, 20, 1, "id_bucket=4/", nil}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var files []File
			var ranges []archive.Range
			for _, f := range c.files {
				ff, r := file(f.partition, f.first, f.last, f.path, f.spec)
				files, ranges = append(files, ff), append(ranges, r)
			}
			got := specConflicts(table, "g", files, ranges, c.state)
			if len(got) != len(c.want) {
				t.Fatalf("conflicts %+v, want %v", got, c.want)
			}
			for _, p := range c.want {
				if h, ok := got[p]; !ok || !h.equal(table[p]) {
					t.Errorf("conflict of %v holds %+v, want the table's %+v", p, h, table[p])
				}
			}
		})
	}
}

// TestCommitRefusesSpecConflict: the table's state holds, beyond
// partition 0's committed offset, paths of spec 7 (the spec id its last
// commit named). A late commit of a file of spec 0 amid them, as a member
// fenced off would make while its successor writes by the other spec, is
// refused with a *SpecConflictError holding the table's state, and
// changes nothing; a commit of a file of spec 0 after every one of those
// paths, with a committed offset past them (a partition that moved at a
// clean point), is appended, and the state's spec id becomes 0.
func TestCommitRefusesSpecConflict(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, config.PartitionField{Transform: "day", Column: "_kafka.timestamp"})
	c := e.open(t)
	h, err := c.Table(ctx, "events", eventSchema(t))
	if err != nil {
		t.Fatal(err)
	}
	loc := c.Location("events")
	k := Partition{"g", "events", 0}
	first := writeFile(t, h, loc, "events", 0, 0, 9, sameDay)
	first.PathID, first.SpecID = "p", specPtr(0)
	before := State{k: {Committed: 10, Paths: map[string]int64{"p": 25}, SpecID: specPtr(7)}}
	if _, err := h.Commit(ctx, "g", []File{first}, before); err != nil {
		t.Fatal(err)
	}
	st, err := h.State(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !equalState(st, before) {
		t.Fatalf("state %+v, want %+v", st, before)
	}

	late := writeFile(t, h, loc, "events", 0, 12, 20, sameDay)
	late.PathID, late.SpecID = "q", specPtr(0)
	_, err = h.Commit(ctx, "g", []File{late}, State{k: {Committed: 12, Paths: map[string]int64{"q": 20}, SpecID: specPtr(0)}})
	var sc *SpecConflictError
	if !errors.As(err, &sc) {
		t.Fatalf("late commit: %v, want a *SpecConflictError", err)
	}
	if !equalState(sc.Held, before) || !strings.Contains(err.Error(), "paths of spec 7 to offset 25") {
		t.Errorf("held %+v (%v), want the table's state", sc.Held, err)
	}
	if st, err = h.State(ctx); err != nil || !equalState(st, before) {
		t.Errorf("after a refused commit, state %+v (%v), want it unchanged", st, err)
	}

	moved := writeFile(t, h, loc, "events", 0, 26, 30, sameDay)
	moved.PathID, moved.SpecID = "q", specPtr(0)
	after := State{k: {Committed: 26, Paths: map[string]int64{"q": 30}, SpecID: specPtr(0)}}
	res, err := h.Commit(ctx, "g", []File{moved}, after)
	if err != nil || res.Appended != 1 {
		t.Fatalf("commit after a clean point: %+v, %v", res, err)
	}
	if st, err = h.State(ctx); err != nil || !equalState(st, after) {
		t.Errorf("state %+v (%v), want %+v", st, err, after)
	}
}
