package table

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"

	"github.com/pqsink/pqsink/archive"
	"github.com/pqsink/pqsink/config"
	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/schema"
)

// TestPartitionFromPath: a file's partition tuple is the one its folders
// say, checked against its column bounds; the null partition and a
// folder that disagrees with the bounds.
func TestPartitionFromPath(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, config.PartitionField{Transform: "bucket", Param: 8, Column: "id"}, config.PartitionField{Transform: "truncate", Param: 1, Column: "name"})
	h, err := e.open(t).Table(ctx, "events", eventSchema(t))
	if err != nil {
		t.Fatal(err)
	}
	loc, err := h.Location(ctx)
	if err != nil {
		t.Fatal(err)
	}
	fields, err := h.PathFields(ctx)
	if err != nil || len(fields) != 2 || fields[0].Name != "id_bucket" || fields[1].Name != "name_trunc" || fields[0].Leaf == nil {
		t.Fatalf("path fields %+v (%v)", fields, err)
	}
	bucket := func(id int64) int32 {
		return iceberg.BucketTransform{NumBuckets: 8}.Apply(iceberg.Optional[iceberg.Literal]{Val: iceberg.NewLiteral(id), Valid: true}).Val.Any().(int32)
	}
	// file writes record o alone and moves it into the folders.
	file := func(o int64, folders string) File {
		f := writeFile(t, h, loc, "events", 0, o, o, sameDay)
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
	// AppendValue gives the folders' values of a record.
	val := func(f PathField, plain []byte) string {
		b, err := f.AppendValue(nil, plain)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	le := func(x int64) []byte {
		return []byte{byte(x), byte(x >> 8), byte(x >> 16), byte(x >> 24), byte(x >> 32), byte(x >> 40), byte(x >> 48), byte(x >> 56)}
	}
	if got, want := val(fields[0], le(7)), fmt.Sprint(bucket(7)); got != want {
		t.Errorf("bucket of 7 = %s, want %s", got, want)
	}
	if got := val(fields[1], []byte("n007")); got != "n" {
		t.Errorf("truncate[1] of n007 = %s", got)
	}
	if got := val(fields[1], nil); got != archive.HiveNull {
		t.Errorf("null = %s", got)
	}
	if got := val(fields[1], []byte{}); got != emptyString {
		t.Errorf("empty string = %s", got)
	}

	seven := file(7, fmt.Sprintf("id_bucket=%d/name_trunc=n", bucket(7)))
	four := file(4, fmt.Sprintf("id_bucket=%d/name_trunc=%s", bucket(4), archive.HiveNull)) // record 4's name is null
	if _, err := h.Commit(ctx, "g", []File{seven, four}, State{{"g", "events", 0}: {Committed: 8}}); err != nil {
		t.Fatal(err)
	}
	tbl, err := e.open(t).cat.LoadTable(ctx, h.ident)
	if err != nil {
		t.Fatal(err)
	}
	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	spec := tbl.Spec()
	ids := map[string]int{}
	for _, f := range spec.Fields() {
		ids[f.Name] = f.FieldID
	}
	want := map[string]map[int]any{
		seven.Location: {ids["id_bucket"]: bucket(7), ids["name_trunc"]: "n"},
		four.Location:  {ids["id_bucket"]: bucket(4), ids["name_trunc"]: nil},
	}
	if len(tasks) != 2 {
		t.Fatalf("%d files in the table, want 2", len(tasks))
	}
	for _, task := range tasks {
		if got := task.File.Partition(); fmt.Sprint(got) != fmt.Sprint(want[task.File.FilePath()]) {
			t.Errorf("%s: partition %v, want %v", task.File.FilePath(), got, want[task.File.FilePath()])
		}
	}

	for _, tc := range []struct {
		name    string
		o       int64
		folders string
		err     string
	}{
		{"another bucket", 9, fmt.Sprintf("id_bucket=%d/name_trunc=n", (bucket(9)+1)%8), "the file's path says"},
		{"an empty string", 11, fmt.Sprintf("id_bucket=%d/name_trunc=%s", bucket(11), emptyString), "the file's path says"},
		{"null for a value", 12, fmt.Sprintf("id_bucket=%d/name_trunc=%s", bucket(12), archive.HiveNull), "the file's path says"},
		{"not a bucket", 13, "id_bucket=8/name_trunc=n", "is not a bucket value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := file(tc.o, tc.folders)
			_, err := h.Commit(ctx, "g", []File{f}, State{{"g", "events", 0}: {Committed: tc.o + 1}})
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("commit: %v, want an error with %q", err, tc.err)
			}
		})
	}
}

// TestPathFieldRefusesBadValues: a value whose bytes do not fit the
// column's type is an error, not a partition value.
func TestPathFieldRefusesBadValues(t *testing.T) {
	leaf := schema.Leaf("id", schema.Required, meta.TypeInt64, schema.Logical{})
	tr, err := newTransform(iceberg.BucketTransform{NumBuckets: 4}, iceberg.Int64Type{})
	if err != nil {
		t.Fatal(err)
	}
	f := PathField{Name: "id_bucket", Column: "id", Leaf: leaf, tr: tr}
	if _, err := f.AppendValue(nil, []byte{1, 2, 3}); err == nil {
		t.Error("three bytes of a long made a partition value")
	}
	if _, err := newTransform(iceberg.BucketTransform{NumBuckets: 4}, iceberg.Float64Type{}); err == nil {
		t.Error("bucket of a double accepted")
	}
	if _, err := newTransform(iceberg.IdentityTransform{}, &iceberg.MapType{}); err == nil {
		t.Error("identity of a map accepted in a path")
	}
}
