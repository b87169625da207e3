package table

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/pqsink/pqsink/config"
)

// TestSnapshotFiles reads back the data files of each of two snapshots,
// in a catalog connection of its own: the old snapshot lists the files of
// the first commit, the current one those of both, with their sizes and
// record counts; a table, a snapshot or a first commit that does not exist
// is a clear error.
func TestSnapshotFiles(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, config.PartitionField{Transform: "day", Column: "_kafka.timestamp"})
	c := e.open(t)
	h, err := c.Table(ctx, "events", eventSchema(t))
	if err != nil {
		t.Fatal(err)
	}
	ident := []string{"kafka", "events"}
	if _, err := c.Snapshot(ctx, ident, 0); !errors.Is(err, ErrNoSuchSnapshot) {
		t.Errorf("a table with no commit: err = %v, want ErrNoSuchSnapshot", err)
	}
	loc := c.Location("events")
	first := []File{
		writeFile(t, h, loc, "events", 0, 0, 9, sameDay),
		writeFile(t, h, loc, "events", 1, 0, 4, sameDay),
	}
	r1, err := h.Commit(ctx, "g", first, State{{"g", "events", 0}: {Committed: 10}, {"g", "events", 1}: {Committed: 5}})
	if err != nil {
		t.Fatal(err)
	}
	second := []File{writeFile(t, h, loc, "events", 0, 10, 19, sameDay)}
	r2, err := h.Commit(ctx, "g", second, State{{"g", "events", 0}: {Committed: 20}})
	if err != nil {
		t.Fatal(err)
	}

	other := e.open(t)
	tests := []struct {
		name    string
		id      int64
		wantID  int64
		current bool
		files   []File
	}{
		{"current", 0, r2.SnapshotID, true, append(append([]File{}, first...), second...)},
		{"current by id", r2.SnapshotID, r2.SnapshotID, true, append(append([]File{}, first...), second...)},
		{"first", r1.SnapshotID, r1.SnapshotID, false, first},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := other.Snapshot(ctx, ident, tc.id)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(s.MetadataLocation, loc+"/metadata/") || !strings.HasSuffix(s.MetadataLocation, ".metadata.json") {
				t.Errorf("metadata location %s, want a metadata file under %s/metadata/", s.MetadataLocation, loc)
			}
			if s.ID != tc.wantID || s.Current != tc.current || s.Table != "kafka.events" || s.Location != loc {
				t.Errorf("snapshot %d (current %v) of %s at %s, want %d (current %v) of kafka.events at %s", s.ID, s.Current, s.Table, s.Location, tc.wantID, tc.current, loc)
			}
			want := map[string]File{}
			for _, f := range tc.files {
				want[f.Location] = f
			}
			if len(s.Files) != len(want) {
				t.Errorf("%d files, want %d: %v", len(s.Files), len(want), s.Files)
			}
			for _, f := range s.Files {
				w, ok := want[f.Location]
				if !ok {
					t.Errorf("file %s is not in the snapshot", f.Location)
					continue
				}
				if f.Size != w.Size || f.Records != w.Footer.NumRows {
					t.Errorf("file %s: size %d, %d records, want %d, %d", f.Location, f.Size, f.Records, w.Size, w.Footer.NumRows)
				}
			}
		})
	}

	errTests := []struct {
		name  string
		ident []string
		id    int64
		want  error
	}{
		{"no such table", []string{"kafka", "nope"}, 0, ErrNoSuchTable},
		{"no such namespace", []string{"elsewhere", "events"}, 0, ErrNoSuchTable},
		{"no such snapshot", ident, r2.SnapshotID + 1, ErrNoSuchSnapshot},
	}
	for _, tc := range errTests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := other.Snapshot(ctx, tc.ident, tc.id); !errors.Is(err, tc.want) {
				t.Errorf("err = %v, want %v", err, tc.want)
			}
		})
	}
}

// TestSnapshotEarlier: a snapshot names, besides its data files, the files
// its ancestors held that a rewrite replaced (Snapshot.Earlier), newest
// first; a table only appended to has none.
func TestSnapshotEarlier(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	c := e.open(t)
	h, err := c.Table(ctx, "events", eventSchema(t))
	if err != nil {
		t.Fatal(err)
	}
	loc := e.warehouse + "/kafka/events"
	a := writeFile(t, h, loc, "events", 0, 0, 9, sameDay)
	b := writeFile(t, h, loc, "events", 0, 10, 19, sameDay)
	if _, err := h.Commit(ctx, "g", []File{a}, State{{"g", "events", 0}: {Committed: 10}}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Commit(ctx, "g", []File{b}, State{{"g", "events", 0}: {Committed: 20}}); err != nil {
		t.Fatal(err)
	}
	ident := []string{"kafka", "events"}
	s, err := c.Snapshot(ctx, ident, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Files) != 2 || len(s.Earlier) != 0 {
		t.Fatalf("after two appends: %d files, earlier %+v; want 2 and none", len(s.Files), s.Earlier)
	}
	merged := writeFile(t, h, loc+"/m", "events", 0, 0, 19, sameDay)
	if _, err := h.Rewrite(ctx, []string{a.Location, b.Location}, []File{merged}); err != nil {
		t.Fatal(err)
	}
	s, err = c.Snapshot(ctx, ident, 0)
	if err != nil {
		t.Fatal(err)
	}
	var earlier []string
	for _, f := range s.Earlier {
		earlier = append(earlier, f.Location)
	}
	slices.Sort(earlier)
	if want := []string{a.Location, b.Location}; len(s.Files) != 1 || s.Files[0].Location != merged.Location || !slices.Equal(earlier, want) {
		t.Errorf("after the rewrite: files %+v, earlier %v; want %s and %v", s.Files, earlier, merged.Location, want)
	}
}
