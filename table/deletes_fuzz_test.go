package table

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table/dv"

	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/schema"
)

// memIO is an iceberg-go IO of one file held in memory, whatever its name.
type memIO struct{ data []byte }

func (m memIO) Open(name string) (icebergio.File, error) {
	return memFile{Reader: bytes.NewReader(m.data), name: name, size: int64(len(m.data))}, nil
}

func (memIO) Remove(string) error { return fs.ErrPermission }

type memFile struct {
	*bytes.Reader
	name string
	size int64
}

func (memFile) Close() error                 { return nil }
func (f memFile) Stat() (fs.FileInfo, error) { return memInfo(f), nil }

type memInfo memFile

func (i memInfo) Name() string     { return i.name }
func (i memInfo) Size() int64      { return i.size }
func (memInfo) Mode() fs.FileMode  { return 0o444 }
func (memInfo) ModTime() time.Time { return time.Time{} }
func (memInfo) IsDir() bool        { return false }
func (memInfo) Sys() any           { return nil }

// FuzzDeleteFiles reads arbitrary bytes as a position delete file, an
// equality delete file and a data file an equality delete applies to. It
// must never panic, whatever the bytes: a delete file is another
// engine's, read before anything is replayed.
func FuzzDeleteFiles(f *testing.F) {
	dir := f.TempDir()
	for _, p := range []string{
		writePosDeletes(f, dir, "p.parquet", []posRow{{"a", 1}, {"b", 2}, {"a", 1 << 40}}),
		writeJSONRows(f, dir, "e.parquet", `message d { required int64 id = 1; optional binary k (STRING) = 2; }`,
			`{"id":1,"k":"x"}`, `{"id":2,"k":null}`, `{"id":3,"k":"y"}`, `{"id":4,"k":""}`, `{"id":5,"k":"z"}`),
		writeJSONRows(f, dir, "g.parquet", `message t { optional group g = 3 { optional int32 id = 1; } optional binary k (STRING) = 2; }`,
			`{"g":{"id":1},"k":"x"}`, `{"g":null,"k":null}`),
	} {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
		f.Add(data[:len(data)/2])
	}
	types := []*schema.Node{
		schema.Leaf("id", schema.Required, meta.TypeInt64, schema.Logical{}),
		schema.Leaf("k", schema.Optional, meta.TypeByteArray, schema.Logical{Kind: schema.String}),
	}
	spec := iceberg.NewPartitionSpecID(0)
	f.Fuzz(func(t *testing.T, data []byte) {
		ctx := context.Background()
		fsys := memIO{data: data}
		b, err := iceberg.NewDataFileBuilder(spec, iceberg.EntryContentPosDeletes, filepath.Join(dir, "x.parquet"), iceberg.ParquetFile, nil, nil, nil, 1, int64(len(data)))
		if err != nil {
			t.Fatal(err)
		}
		_ = readPositionDeletes(ctx, fsys, b.Build(), func([]byte, int64) error { return nil })
		keys := map[string]struct{}{"\x01\x01\x00\x00\x00\x00\x00\x00\x00\x01\x01x": {}}
		_, _ = readEqualityKeys(ctx, fsys, b.Build(), []int{1, 2}, keys)
		_ = matchEqualityKeys(ctx, fsys, b.Build(), []int{1, 2}, types, keys, dv.NewRoaringPositionBitmap())
	})
}
