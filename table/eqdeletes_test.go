package table

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"

	"github.com/pqsink/pqsink/rowgroup/rowgrouptest"
	"github.com/pqsink/pqsink/schema"
	"github.com/pqsink/pqsink/writer"
)

// writeJSONRows writes rows (JSON objects) under the message schema text
// with pqsink's writer, into dir/name, and returns the path.
func writeJSONRows(t testing.TB, dir, name, schemaText string, rows ...string) string {
	t.Helper()
	msg, err := schema.Parse(schemaText)
	if err != nil {
		t.Fatal(err)
	}
	g, b := rowgrouptest.JSON(t, msg)
	var out bytes.Buffer
	w, err := writer.New(&out, msg)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range rows {
		if err := b.Append([]byte(r), nil); err != nil {
			t.Fatalf("row %d %s: %v", i, r, err)
		}
		if i%4 == 3 { // several row groups
			if err := w.WriteRowGroup(g); err != nil {
				t.Fatal(err)
			}
			g.Reset()
		}
	}
	if err := w.WriteRowGroup(g); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestApplyEqualityDeletes checks equality delete files against data files
// written with pqsink's writer: a row is deleted when its values of the
// delete file's equality fields (by field id, nested ones too) equal a
// delete row's, a null equal to a null, an int equal to a long; a data
// file without the field holds null in it; a delete applies to data files
// of its partition, or of every partition when its spec is unpartitioned,
// whose data sequence number is less than its own, never equal. Floating
// point fields, and a field whose type differs, are refused.
func TestApplyEqualityDeletes(t *testing.T) {
	dir := t.TempDir()
	fsys := icebergio.LocalFS{}
	const dataSchema = `message t { required int64 id = 1; optional binary k (STRING) = 2; optional group g = 3 { optional int32 n = 4; optional double x = 5; } }`
	var rows []string
	for i := range 10 {
		k := `"k` + string(rune('0'+i)) + `"`
		if i%3 == 0 {
			k = "null"
		}
		rows = append(rows, `{"id":`+string(rune('0'+i))+`,"k":`+k+`,"g":{"n":`+string(rune('0'+i))+`,"x":1.5}}`)
	}
	spec0 := iceberg.NewPartitionSpecID(0, iceberg.PartitionField{SourceIDs: []int{1}, FieldID: 1000, Name: "day", Transform: iceberg.IdentityTransform{}})
	spec1 := iceberg.NewPartitionSpecID(1)
	specs := func(id int32) *iceberg.PartitionSpec {
		return map[int32]*iceberg.PartitionSpec{0: &spec0, 1: &spec1}[id]
	}
	entry := func(spec iceberg.PartitionSpec, content iceberg.ManifestEntryContent, path string, part map[int]any, seq int64, ids ...int) snapFile {
		t.Helper()
		b, err := iceberg.NewDataFileBuilder(spec, content, path, iceberg.ParquetFile, part, nil, nil, 10, 1000)
		if err != nil {
			t.Fatal(err)
		}
		if len(ids) > 0 {
			b.EqualityFieldIDs(ids)
		}
		return snapFile{df: b.Build(), seq: seq}
	}
	day := func(d int32) map[int]any { return map[int]any{1000: d} }
	full := writeJSONRows(t, dir, "full.parquet", dataSchema, rows...)
	var ids []string
	for i := range 10 {
		ids = append(ids, `{"id":`+string(rune('0'+i))+`}`)
	}
	onlyID := writeJSONRows(t, dir, "old.parquet", `message t { required int64 id = 1; }`, ids...)
	a := entry(spec0, iceberg.EntryContentData, full, day(5), 2)
	b := entry(spec0, iceberg.EntryContentData, writeJSONRows(t, dir, "b.parquet", dataSchema, rows...), day(6), 2)
	c := entry(spec0, iceberg.EntryContentData, writeJSONRows(t, dir, "c.parquet", dataSchema, rows...), day(5), 4)
	old := entry(spec0, iceberg.EntryContentData, onlyID, day(5), 1)
	data := []snapFile{a, b, c, old}
	del := func(name, schemaText string, spec iceberg.PartitionSpec, part map[int]any, seq int64, fields []int, rows ...string) snapFile {
		return entry(spec, iceberg.EntryContentEqDeletes, writeJSONRows(t, dir, name, schemaText, rows...), part, seq, fields...)
	}
	const byK = `message d { optional binary k (STRING) = 2; }`
	tests := []struct {
		name    string
		deletes []snapFile
		want    map[string][]int64
		err     string
	}{
		{"by a string field, null included", []snapFile{del("d1.parquet", byK, spec0, day(5), 4, []int{2}, `{"k":"k1"}`, `{"k":"k4"}`, `{"k":null}`)},
			// b: another partition; c: the same sequence number; old: no k.
			map[string][]int64{"full.parquet": {0, 1, 3, 4, 6, 9}, "old.parquet": {0, 1, 2, 3, 4, 5, 6, 7, 8, 9}}, ""},
		{"by two fields", []snapFile{del("d2.parquet", `message d { required int64 id = 1; optional binary k (STRING) = 2; }`, spec0, day(5), 3, []int{1, 2},
			`{"id":1,"k":"k1"}`, `{"id":2,"k":"nope"}`, `{"id":3,"k":null}`)},
			map[string][]int64{"full.parquet": {1, 3}, "old.parquet": {3}}, ""},
		{"a nested int by a long", []snapFile{del("d3.parquet", `message d { optional group g = 3 { optional int64 n = 4; } }`, spec0, day(5), 3, []int{4}, `{"g":{"n":7}}`)},
			map[string][]int64{"full.parquet": {7}, "old.parquet": {}}, ""},
		{"an unpartitioned delete", []snapFile{del("d4.parquet", `message d { required int64 id = 1; }`, spec1, nil, 6, []int{1}, `{"id":5}`)},
			map[string][]int64{"full.parquet": {5}, "b.parquet": {5}, "c.parquet": {5}, "old.parquet": {5}}, ""},
		{"a delete of nothing", []snapFile{del("d5.parquet", `message d { required int64 id = 1; }`, spec0, day(5), 6, []int{1}, `{"id":42}`)},
			map[string][]int64{}, ""},
		{"a floating-point field", []snapFile{del("d6.parquet", `message d { optional group g = 3 { optional double x = 5; } }`, spec0, day(5), 3, []int{5}, `{"g":{"x":1.5}}`)},
			nil, "equality field 5 (g.x) is a floating-point number"},
		{"a field of another type", []snapFile{del("d7.parquet", `message d { optional int64 k = 2; }`, spec0, day(5), 3, []int{2}, `{"k":1}`)},
			nil, "equality field 2 is BYTE_ARRAY"},
		{"a field the delete file lacks", []snapFile{del("d8.parquet", byK, spec0, day(5), 3, []int{1}, `{"k":"k1"}`)},
			nil, "no column has equality field id 1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := applyDeletes(context.Background(), fsys, specs, "kafka.t", 7, data, tc.deletes)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("applyDeletes: %v, want an error saying %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			gotByName := map[string][]int64{}
			for p, set := range got {
				var rows []int64
				for pos := range set.b.Positions() {
					rows = append(rows, int64(pos))
				}
				gotByName[filepath.Base(p)] = rows
			}
			for name, w := range tc.want {
				if len(w) == 0 {
					delete(tc.want, name)
				}
			}
			if len(gotByName) != len(tc.want) {
				t.Errorf("deletes apply to %v, want %v", gotByName, tc.want)
			}
			for name, want := range tc.want {
				if !slices.Equal(gotByName[name], want) {
					t.Errorf("%s: deleted %v, want %v", name, gotByName[name], want)
				}
			}
		})
	}
}
