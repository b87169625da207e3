package tablecommit

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
// value. (The partition's dead letters are no path: it leaves them out.)
func TestViewFollows(t *testing.T) {
	view := func(text string) *Committer {
		tmpl, err := archive.Parse(text, true)
		if err != nil {
			t.Fatal(err)
		}
		return &Committer{tmpl: tmpl}
	}
	old := view("kafka/t/data/n_bucket={field:n}/{topic}+{partition}+{first_offset}.parquet")
	added := view("kafka/t/data/n_bucket={field:n}/ts_day={record_time:2006-01-02}/{topic}+{partition}+{first_offset}.parquet")
	dropped := view("kafka/t/data/{topic}+{partition}+{first_offset}.parquet")
	id := func(tc *Committer, vals ...string) string {
		return string(tc.tmpl.AppendIdentity(nil, "t", 0, time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC), vals))
	}
	oldID, addedID, droppedID := id(old, "3"), id(added, "3"), id(dropped)
	for _, c := range []struct {
		name                string
		skip                map[string]int64
		old, added, dropped bool
	}{
		{"none", map[string]int64{}, true, true, true},
		{"the old spec's", map[string]int64{oldID: 5}, true, false, false},
		{"the added spec's", map[string]int64{addedID: 5}, false, true, false},
		{"the dropped spec's", map[string]int64{droppedID: 5}, false, false, true},
		{"of two specs", map[string]int64{oldID: 5, addedID: 7}, false, false, false},
		{"not the table's", map[string]int64{"elsewhere/t+0+\x00.parquet": 5}, false, false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, v := range []struct {
				name string
				tc   *Committer
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
// view, when they are its. Without paths, the current view whatever the
// spec id.
func TestViewForSpecID(t *testing.T) {
	commits := &commits{views: map[int]*Committer{}}
	view := func(id int) *Committer {
		tmpl, err := archive.Parse("kafka/t/data/id_bucket={field:id}/{topic}+{partition}+{first_offset}.parquet", true)
		if err != nil {
			t.Fatal(err)
		}
		v := &Committer{tmpl: tmpl, specID: id, commits: commits}
		commits.views[id] = v
		return v
	}
	old, cur := view(0), view(1)
	commits.cur.Store(cur)
	path := string(old.tmpl.AppendIdentity(nil, "t", 0, time.Time{}, []string{"12"}))
	spec := func(id int) *int { return &id }
	for _, c := range []struct {
		name string
		skip map[string]int64
		spec *int
		want *Committer
	}{
		{"the old spec's id", map[string]int64{path: 40}, spec(0), old},
		{"the current spec's id", map[string]int64{path: 40}, spec(1), cur},
		{"no spec id: by the folders", map[string]int64{path: 40}, nil, cur},
		{"no paths", map[string]int64{}, spec(0), cur},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := cur.ViewFor(context.Background(), c.skip, c.spec)
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Errorf("resumes by the view of spec %d, want %d", got.specID, c.want.specID)
			}
		})
	}
}
