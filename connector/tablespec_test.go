package connector

import (
	"context"
	"testing"
	"time"

	"github.com/pqsink/pqsink/archive"
)

// TestViewFollows: a skip set's paths are a view's when its template
// renders each of them, with no folder inside a value: the paths of a
// spec that adds a folder after a {field} are not the paths of the spec
// before, though that {field} could take the added folder as part of its
// value. Dead letters are no path.
func TestViewFollows(t *testing.T) {
	view := func(text string) *tableCommitter {
		tmpl, err := archive.Parse(text, true)
		if err != nil {
			t.Fatal(err)
		}
		return &tableCommitter{tmpl: tmpl}
	}
	old := view("kafka/t/data/n_bucket={field:n}/{topic}+{partition}+{first_offset}.parquet")
	added := view("kafka/t/data/n_bucket={field:n}/ts_day={record_time:2006-01-02}/{topic}+{partition}+{first_offset}.parquet")
	dropped := view("kafka/t/data/{topic}+{partition}+{first_offset}.parquet")
	id := func(tc *tableCommitter, vals ...string) string {
		return string(tc.tmpl.AppendIdentity(nil, "t", 0, time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC), vals))
	}
	oldID, addedID, droppedID := id(old, "3"), id(added, "3"), id(dropped)
	for _, c := range []struct {
		name                string
		skip                skipSet
		old, added, dropped bool
	}{
		{"none", skipSet{}, true, true, true},
		{"dead letters only", skipSet{deadLetterID: 9}, true, true, true},
		{"the old spec's", skipSet{oldID: 5, deadLetterID: 9}, true, false, false},
		{"the added spec's", skipSet{addedID: 5}, false, true, false},
		{"the dropped spec's", skipSet{droppedID: 5}, false, false, true},
		{"of two specs", skipSet{oldID: 5, addedID: 7}, false, false, false},
		{"not the table's", skipSet{"elsewhere/t+0+\x00.parquet": 5}, false, false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, v := range []struct {
				name string
				tc   *tableCommitter
				want bool
			}{{"old", old, c.old}, {"added", added, c.added}, {"dropped", dropped, c.dropped}} {
				if got := v.tc.follows(c.skip); got != v.want {
					t.Errorf("the %s view follows %v: %v, want %v", v.name, c.skip, got, v.want)
				}
			}
		})
	}
}

// TestViewForSpecID: a partition resumes by the view of the spec id its
// table's state records for its paths, even when another spec names its
// folders alike (bucket[16](id) replaced by bucket[8](id), both as
// id_bucket), whose paths the skip set's are too; without a spec id it
// resumes, as before spec ids were kept, by the folders: the current
// view, when they are its. Without paths (dead letters aside), the
// current view whatever the spec id.
func TestViewForSpecID(t *testing.T) {
	commits := &tableCommits{views: map[int]*tableCommitter{}}
	view := func(id int) *tableCommitter {
		tmpl, err := archive.Parse("kafka/t/data/id_bucket={field:id}/{topic}+{partition}+{first_offset}.parquet", true)
		if err != nil {
			t.Fatal(err)
		}
		v := &tableCommitter{tmpl: tmpl, specID: id, tableCommits: commits}
		commits.views[id] = v
		return v
	}
	old, cur := view(0), view(1)
	commits.cur.Store(cur)
	path := string(old.tmpl.AppendIdentity(nil, "t", 0, time.Time{}, []string{"12"}))
	spec := func(id int) *int { return &id }
	for _, c := range []struct {
		name string
		skip skipSet
		spec *int
		want *tableCommitter
	}{
		{"the old spec's id", skipSet{path: 40}, spec(0), old},
		{"the current spec's id", skipSet{path: 40}, spec(1), cur},
		{"no spec id: by the folders", skipSet{path: 40}, nil, cur},
		{"no paths", skipSet{}, spec(0), cur},
		{"dead letters only", skipSet{deadLetterID: 40}, spec(0), cur},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := cur.viewFor(context.Background(), c.skip, c.spec)
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Errorf("resumes by the view of spec %d, want %d", got.specID, c.want.specID)
			}
		})
	}
}
