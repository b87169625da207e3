package table

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	itable "github.com/apache/iceberg-go/table"

	"github.com/pqsink/pqsink/config"
)

// movedFile writes the records first..last of events[0] as writeFile does
// and moves the file into folders under the table's data folder.
func movedFile(t *testing.T, h *Handle, loc string, first, last int64, folders string) File {
	t.Helper()
	f := writeFile(t, h, loc, "events", 0, first, last, sameDay)
	dst := strings.TrimPrefix(loc, "file://") + "/data/" + folders + "/" + filepath.Base(f.Location)
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(strings.TrimPrefix(f.Location, "file://"), dst); err != nil {
		t.Fatal(err)
	}
	f.Location = "file://" + dst
	return f
}

// TestCommitAfterSpecChange: after another engine adds a partition field
// to the table's spec, files written by the spec before are committed
// with it (the one their SpecID names, or the one their folders name),
// beside files of the new spec, in one snapshot: each entry carries its
// spec's id and tuple, in a manifest of its spec. Given the new spec, a
// file of the old one whose records span the new field's values is
// refused: before, every commit after the change was.
func TestCommitAfterSpecChange(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, config.PartitionField{Transform: "identity", Column: "_kafka.topic"})
	h, err := e.open(t).Table(ctx, "events", eventSchema(t))
	if err != nil {
		t.Fatal(err)
	}
	loc, err := h.Location(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if h.CommittedSpec() != -1 {
		t.Errorf("committed spec before any commit: %d, want -1", h.CommittedSpec())
	}
	old, err := h.PathSpec(ctx, DefaultSpec)
	if err != nil || len(old.Fields) != 1 || old.Fields[0].Name != "_kafka_topic" {
		t.Fatalf("path spec %+v (%v)", old, err)
	}
	first := movedFile(t, h, loc, 0, 9, "_kafka_topic=events")
	if _, err := h.Commit(ctx, "g", []File{first}, State{{"g", "events", 0}: {Committed: 10}}); err != nil {
		t.Fatal(err)
	}
	if h.CommittedSpec() != old.ID {
		t.Errorf("committed spec %d, want %d", h.CommittedSpec(), old.ID)
	}

	// Another engine adds hour(_kafka.timestamp).
	tbl, err := e.open(t).cat.LoadTable(ctx, h.ident)
	if err != nil {
		t.Fatal(err)
	}
	tx := tbl.NewTransaction()
	if err := tx.UpdateSpec(true).AddField("_kafka.timestamp", iceberg.HourTransform{}, "ts_hour").Commit(); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	cur, err := h.PathSpec(ctx, DefaultSpec)
	if err != nil || cur.ID == old.ID || len(cur.Fields) != 2 || cur.Fields[1].Name != "ts_hour" {
		t.Fatalf("path spec after the change %+v (%v)", cur, err)
	}
	if again, err := h.PathSpec(ctx, old.ID); err != nil || again.ID != old.ID || len(again.Fields) != 1 {
		t.Errorf("path spec %d after the change: %+v (%v)", old.ID, again, err)
	}
	if ids, err := h.SpecIDs(ctx); err != nil || len(ids) != 2 || ids[0] != cur.ID || ids[1] != old.ID {
		t.Errorf("spec ids %v (%v), want the default one, %d, first, then %d", ids, err, cur.ID, old.ID)
	}
	if _, err := h.PathSpec(ctx, 99); err == nil || !strings.Contains(err.Error(), "not one of the table's") {
		t.Errorf("path spec 99: %v", err)
	}

	// Record o is at day0 + o seconds: offsets 3590 to 3615 span two
	// hours.
	hour := func(o int64) string { return day0.Add(time.Duration(o) * time.Second).Format("2006-01-02-15") }
	oldID := old.ID
	spans := movedFile(t, h, loc, 3590, 3615, "_kafka_topic=events")
	for _, c := range []struct {
		name string
		spec *int
		err  string
	}{
		{"the new spec", &cur.ID, "spans more than one partition"},
		{"a spec the table lacks", new(99), "not one of the table's"},
	} {
		f := spans
		f.SpecID = c.spec
		if _, err := h.Commit(ctx, "g", []File{f}, State{{"g", "events", 0}: {Committed: 4000}}); err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("a file of the old spec committed as of %s: %v, want an error with %q", c.name, err, c.err)
		}
	}

	tcs := []struct {
		name string
		f    File
		spec *int
		want int
	}{
		{"named by SpecID", spans, &oldID, oldID},
		{"inferred from its folders", movedFile(t, h, loc, 10, 19, "_kafka_topic=events"), nil, oldID},
		{"of the new spec", movedFile(t, h, loc, 3620, 3629, "_kafka_topic=events/ts_hour="+hour(3620)), nil, cur.ID},
		{"of the new spec, named", movedFile(t, h, loc, 3630, 3639, "_kafka_topic=events/ts_hour="+hour(3630)), &cur.ID, cur.ID},
	}
	var files []File
	for _, tc := range tcs {
		f := tc.f
		f.SpecID = tc.spec
		f.PathID = tc.name
		files = append(files, f)
	}
	res, err := h.Commit(ctx, "g", files, State{{"g", "events", 0}: {Committed: 4000}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Appended != len(files) {
		t.Errorf("appended %d, want %d", res.Appended, len(files))
	}
	if h.CommittedSpec() != cur.ID {
		t.Errorf("committed spec %d, want %d", h.CommittedSpec(), cur.ID)
	}

	tbl, err = e.open(t).cat.LoadTable(ctx, h.ident)
	if err != nil {
		t.Fatal(err)
	}
	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	bySpec := map[string]int32{}
	parts := map[string]map[int]any{}
	for _, task := range tasks {
		bySpec[task.File.FilePath()] = task.File.SpecID()
		parts[task.File.FilePath()] = task.File.Partition()
	}
	if len(tasks) != 1+len(tcs) {
		t.Errorf("%d files in the table, want %d", len(tasks), 1+len(tcs))
	}
	newSpec := tbl.Spec()
	ids := map[string]int{}
	for _, f := range newSpec.Fields() {
		ids[f.Name] = f.FieldID
	}
	for _, tc := range tcs {
		if got := bySpec[tc.f.Location]; got != int32(tc.want) {
			t.Errorf("%s: spec %d, want %d", tc.name, got, tc.want)
		}
		p := parts[tc.f.Location]
		if p[ids["_kafka_topic"]] != "events" {
			t.Errorf("%s: partition %v, want _kafka_topic events", tc.name, p)
		}
		if _, ok := p[ids["ts_hour"]]; ok != (tc.want == cur.ID) {
			t.Errorf("%s: partition %v: ts_hour in it is %v, want %v", tc.name, p, ok, tc.want == cur.ID)
		}
	}
	// Each manifest holds the files of one spec.
	fs, err := tbl.FS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	mans, err := tbl.CurrentSnapshot().Manifests(fs)
	if err != nil {
		t.Fatal(err)
	}
	specs := map[int32]int{}
	for _, m := range mans {
		entries, err := m.FetchEntries(fs, false)
		if err != nil {
			t.Fatal(err)
		}
		for _, en := range entries {
			if en.DataFile().SpecID() != m.PartitionSpecID() {
				t.Errorf("manifest of spec %d holds %s of spec %d", m.PartitionSpecID(), en.DataFile().FilePath(), en.DataFile().SpecID())
			}
			specs[m.PartitionSpecID()]++
		}
	}
	if specs[int32(oldID)] != 3 || specs[int32(cur.ID)] != 2 {
		t.Errorf("files by spec in the manifests: %v, want 3 of spec %d and 2 of spec %d", specs, oldID, cur.ID)
	}
	// A filter on the hour prunes the new spec's file of another hour;
	// the old spec's files, without the field, are kept unless their
	// bounds exclude it.
	at := day0.Add(3625 * time.Second)
	tasks, err = tbl.Scan(itable.WithRowFilter(iceberg.GreaterThanEqual(iceberg.Reference("_kafka.timestamp"), iceberg.Timestamp(at.UnixMicro())))).PlanFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var kept []string
	for _, task := range tasks {
		kept = append(kept, filepath.Base(task.File.FilePath()))
	}
	if len(kept) != 2 {
		t.Errorf("files kept by a filter on the timestamp: %v, want the two of the new spec", kept)
	}
}
