package writer_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	pqgo "github.com/parquet-go/parquet-go"

	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/rowgroup"
	"github.com/pqsink/pqsink/schema"
	"github.com/pqsink/pqsink/test/crossread"
	"github.com/pqsink/pqsink/writer"
)

const flatSchema = `message flat {
  required int64 id;
  optional int32 small (INTEGER(8,true));
  optional int32 u32 (INTEGER(32,false));
  required boolean flag;
  optional float f;
  optional double d;
  optional binary name (STRING);
  optional fixed_len_byte_array(16) uid (UUID);
  optional int96 legacy_ts;
  optional group tags (LIST) { repeated group list { optional binary element (STRING); } }
}`

// fillFlat appends n deterministic rows, with nulls, repeats and edge values.
func fillFlat(g *rowgroup.RowGroup, n int) {
	c := g.Columns()
	for i := 0; i < n; i++ {
		c[0].AppendInt64(0, int64(i)*7919-int64(n))
		if i%5 == 0 {
			c[1].Null(0, 0)
		} else {
			c[1].AppendInt32(0, int32(i%256-128))
		}
		c[2].AppendInt32(0, int32(uint32(i)*2654435761))
		c[3].AppendBool(0, i%3 == 0)
		switch i % 7 {
		case 0:
			c[4].AppendFloat(0, float32(math.NaN()))
		case 1:
			c[4].Null(0, 0)
		default:
			c[4].AppendFloat(0, float32(i)/3)
		}
		if i%11 == 0 {
			c[5].AppendDouble(0, math.Copysign(0, -1))
		} else {
			c[5].AppendDouble(0, float64(i)*1.5-100)
		}
		if i%4 == 3 {
			c[6].Null(0, 0)
		} else {
			c[6].AppendBytes(0, []byte(fmt.Sprintf("user-%d", i%50)))
		}
		var uid [16]byte
		uid[0], uid[15] = byte(i), byte(i>>8)
		c[7].AppendBytes(0, uid[:])
		var ts [12]byte
		ts[0], ts[11] = byte(i), 1
		c[8].AppendInt96(0, ts)
		switch i % 4 {
		case 0: // null list
			c[9].Null(0, 0)
		case 1: // empty list
			c[9].Null(0, 1)
		default:
			for j := 0; j < i%4; j++ {
				rep := uint8(1)
				if j == 0 {
					rep = 0
				}
				if j == 1 && i%8 == 3 {
					c[9].Null(rep, 2)
					continue
				}
				c[9].AppendBytes(rep, []byte(fmt.Sprintf("t%d", (i+j)%9)))
			}
		}
		g.EndRow()
	}
}

func TestWriterReadersAgree(t *testing.T) {
	s := schema.MustParse(flatSchema)
	cases := []struct {
		name string
		opts []writer.Option
	}{
		{"defaults", nil},
		{"v2-zstd", []writer.Option{writer.DataPageVersion(2), writer.Compression(meta.CodecZstd, 3)}},
		{"plain-gzip", []writer.Option{writer.Dictionary(false), writer.Compression(meta.CodecGzip, 0)}},
		{"small-pages-lz4raw", []writer.Option{writer.PageSize(256), writer.Compression(meta.CodecLZ4Raw, 0)}},
		{"tiny-dictionary-brotli", []writer.Option{writer.DictionaryPageSize(64), writer.PageSize(512), writer.Compression(meta.CodecBrotli, 0)}},
		{"delta-encodings", []writer.Option{writer.Dictionary(false), writer.DataPageVersion(2),
			writer.ColumnEncoding("id", meta.EncodingDeltaBinaryPacked),
			writer.ColumnEncoding("u32", meta.EncodingDeltaBinaryPacked),
			writer.ColumnEncoding("name", meta.EncodingDeltaLengthByteArray),
			writer.ColumnEncoding("tags.list.element", meta.EncodingDeltaByteArray),
			writer.ColumnEncoding("flag", meta.EncodingRLE),
		}},
		// arrow-go cannot decode DELTA_BYTE_ARRAY on FIXED_LEN_BYTE_ARRAY
		// (it panics), so this case is checked by parquet-go alone.
		{"delta-fixed", []writer.Option{writer.Dictionary(false), writer.ColumnEncoding("uid", meta.EncodingDeltaByteArray)}},
		{"byte-stream-split", []writer.Option{writer.Dictionary(false), writer.Compression(meta.CodecUncompressed, 0),
			writer.ColumnEncoding("f", meta.EncodingByteStreamSplit),
			writer.ColumnEncoding("d", meta.EncodingByteStreamSplit),
			writer.ColumnEncoding("id", meta.EncodingByteStreamSplit),
			writer.ColumnEncoding("uid", meta.EncodingByteStreamSplit),
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "flat.parquet")
			var want [][]crossread.Chunk
			var buf bytes.Buffer
			w, err := writer.New(&buf, s, tc.opts...)
			if err != nil {
				t.Fatal(err)
			}
			g := rowgroup.New(s)
			for _, n := range []int{3000, 1, 517} {
				g.Reset()
				fillFlat(g, n)
				want = append(want, crossread.FromRowGroup(g))
				if err := w.WriteRowGroup(g); err != nil {
					t.Fatal(err)
				}
			}
			md, err := w.Close()
			if err != nil {
				t.Fatal(err)
			}
			if md.NumRows != 3518 || len(md.RowGroups) != 3 {
				t.Fatalf("footer: %d rows in %d row groups", md.NumRows, len(md.RowGroups))
			}
			if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			readers := map[string]func(string) ([][]crossread.Chunk, error){
				"parquet-go": crossread.ParquetGo,
				"arrow-go":   crossread.Arrow,
				"pqsink":     crossread.PQSink,
			}
			if tc.name == "delta-fixed" {
				if _, err := crossread.Arrow(path); err == nil {
					t.Errorf("arrow-go now reads DELTA_BYTE_ARRAY on FIXED_LEN_BYTE_ARRAY: add it back to this case")
				}
				delete(readers, "arrow-go")
			}
			if tc.name == "small-pages-lz4raw" {
				// parquet-go (v0.32) returns zeros for an LZ4_RAW page whose
				// decompression outgrew its pooled buffer, as the PLAIN
				// doubles of d do here; arrow-go and pqsink check the bytes
				// (test/writer_matrix_test.go names the same bug).
				delete(readers, "parquet-go")
			}
			for name, read := range readers {
				got, err := read(path)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				compareChunks(t, name, s, want, got)
			}
		})
	}
}

func compareChunks(t *testing.T, reader string, s *schema.Schema, want, got [][]crossread.Chunk) {
	t.Helper()
	if len(want) != len(got) {
		t.Fatalf("%s: %d row groups, want %d", reader, len(got), len(want))
	}
	for r := range want {
		for c := range want[r] {
			w, g := want[r][c], got[r][c]
			name := s.Leaves()[c].PathString()
			if !reflect.DeepEqual(w.Rep, g.Rep) {
				t.Errorf("%s: row group %d column %s: repetition levels differ", reader, r, name)
			}
			if !reflect.DeepEqual(w.Def, g.Def) {
				t.Errorf("%s: row group %d column %s: definition levels differ", reader, r, name)
			}
			if !reflect.DeepEqual(w.Values, g.Values) {
				t.Errorf("%s: row group %d column %s: %d values differ from the %d written (first: %v vs %v)", reader, r, name, len(g.Values), len(w.Values), head(g.Values), head(w.Values))
			}
		}
	}
}

func head(v []string) []string {
	if len(v) > 3 {
		return v[:3]
	}
	return v
}

// TestWriterMetadataTellsTheTruth checks what the footer says about
// encodings, dictionary fallback, statistics, the page index and bloom
// filters, against the data written and against parquet-go's view.
func TestWriterMetadataTellsTheTruth(t *testing.T) {
	s := schema.MustParse(`message m { required binary name (STRING); optional int64 n; }`)
	g := rowgroup.New(s)
	const rows = 5000
	for i := 0; i < rows; i++ {
		// Repeats pay for a dictionary; the distinct second half overflows it.
		v := i
		if i < rows/2 {
			v = i % 50
		}
		g.Column(0).AppendBytes(0, []byte(fmt.Sprintf("name-%05d", v)))
		if i%10 == 0 {
			g.Column(1).Null(0, 0)
		} else {
			g.Column(1).AppendInt64(0, int64(i%7)-3)
		}
		g.EndRow()
	}
	var buf bytes.Buffer
	w, err := writer.New(&buf, s, writer.DictionaryPageSize(4096), writer.PageSize(2048), writer.AdaptiveEncoding(false),
		writer.BloomFilter("name", 0.01), writer.BloomFilter("n", 0.01))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WriteRowGroup(g); err != nil {
		t.Fatal(err)
	}
	md, err := w.Close()
	if err != nil {
		t.Fatal(err)
	}
	name := md.RowGroups[0].Columns[0].MetaData
	encs := map[meta.Encoding]bool{}
	for _, e := range name.Encodings {
		encs[e] = true
	}
	if !encs[meta.EncodingRLEDictionary] || !encs[meta.EncodingPlain] {
		t.Errorf("name: encodings %v, want dictionary pages and PLAIN fallback", name.Encodings)
	}
	var dictPages, dataDict, dataPlain int32
	for _, st := range name.EncodingStats {
		switch {
		case st.PageType == meta.PageDictionary:
			dictPages += st.Count
		case st.Encoding == meta.EncodingRLEDictionary:
			dataDict += st.Count
		case st.Encoding == meta.EncodingPlain:
			dataPlain += st.Count
		}
	}
	if dictPages != 1 || dataDict == 0 || dataPlain == 0 {
		t.Errorf("name: encoding stats %+v: want 1 dictionary page, dictionary-encoded pages, then PLAIN pages", name.EncodingStats)
	}
	if got := string(name.Statistics.MinValue); got != "name-00000" {
		t.Errorf("name min = %q", got)
	}
	if got := string(name.Statistics.MaxValue); got != "name-04999" {
		t.Errorf("name max = %q", got)
	}
	n := md.RowGroups[0].Columns[1].MetaData
	if *n.Statistics.NullCount != rows/10 {
		t.Errorf("n null count = %d, want %d", *n.Statistics.NullCount, rows/10)
	}
	if lo, hi := int64(binary.LittleEndian.Uint64(n.Statistics.MinValue)), int64(binary.LittleEndian.Uint64(n.Statistics.MaxValue)); lo != -3 || hi != 3 {
		t.Errorf("n min/max = %d/%d, want -3/3", lo, hi)
	}

	f, err := pqgo.OpenFile(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	cis, ois, err := f.ReadPageIndex()
	if err != nil {
		t.Fatalf("parquet-go reads the page index: %v", err)
	}
	if len(ois[0].PageLocations) < 2 {
		t.Fatalf("name: %d pages, want several", len(ois[0].PageLocations))
	}
	var first int64
	for i, loc := range ois[0].PageLocations {
		if loc.FirstRowIndex < first || (i == 0 && loc.FirstRowIndex != 0) {
			t.Errorf("page %d first row %d after %d", i, loc.FirstRowIndex, first)
		}
		first = loc.FirstRowIndex
		if string(cis[0].MinValues[i]) > string(cis[0].MaxValues[i]) {
			t.Errorf("page %d: min %q above max %q", i, cis[0].MinValues[i], cis[0].MaxValues[i])
		}
	}
	cc := f.RowGroups()[0].ColumnChunks()
	bf := cc[0].BloomFilter()
	if bf == nil {
		t.Fatal("parquet-go finds no bloom filter on name")
	}
	for i := rows / 2; i < rows; i += 97 {
		ok, err := bf.Check(pqgo.ValueOf(fmt.Sprintf("name-%05d", i)))
		if err != nil || !ok {
			t.Fatalf("bloom filter misses name-%05d (%v)", i, err)
		}
	}
	falsePositives := 0
	for i := 0; i < 1000; i++ {
		if ok, _ := bf.Check(pqgo.ValueOf(fmt.Sprintf("absent-%d", i))); ok {
			falsePositives++
		}
	}
	if falsePositives > 50 {
		t.Errorf("bloom filter: %d of 1000 absent values pass at fpp 0.01", falsePositives)
	}
	if ok, err := cc[1].BloomFilter().Check(pqgo.ValueOf(int64(-3))); err != nil || !ok {
		t.Errorf("bloom filter on n misses -3 (%v)", err)
	}
}

// footerKV returns the key_value_metadata of a finished file.
func footerKV(t *testing.T, data []byte) map[string]string {
	t.Helper()
	n := binary.LittleEndian.Uint32(data[len(data)-8:])
	var fmd meta.FileMetaData
	if _, err := fmd.Decode(data[len(data)-8-int(n) : len(data)-8]); err != nil {
		t.Fatal(err)
	}
	kv := map[string]string{}
	for _, e := range fmd.KeyValueMetadata {
		if _, dup := kv[e.Key]; dup {
			t.Errorf("key %q twice in the footer", e.Key)
		}
		kv[e.Key] = *e.Value
	}
	return kv
}

// TestWriterSetKeyValue: SetKeyValue entries reach the footer, replace
// earlier ones and the KeyValue options' defaults, and belong to one file:
// Reset drops them and the defaults come back.
func TestWriterSetKeyValue(t *testing.T) {
	s := schema.MustParse(flatSchema)
	g := rowgroup.New(s)
	fillFlat(g, 10)
	var first bytes.Buffer
	w, err := writer.New(&first, s, writer.KeyValue("pqsink.version", "test"), writer.KeyValue("team", "a"))
	if err != nil {
		t.Fatal(err)
	}
	w.SetKeyValue("pqsink.kafka.last_offset", "41")
	if err := w.WriteRowGroup(g); err != nil {
		t.Fatal(err)
	}
	w.SetKeyValue("pqsink.kafka.last_offset", "42") // known only at the end
	w.SetKeyValue("team", "b")
	md, err := w.Close()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"pqsink.version": "test", "team": "b", "pqsink.kafka.last_offset": "42"}
	if got := footerKV(t, first.Bytes()); !reflect.DeepEqual(got, want) {
		t.Errorf("first file: %v, want %v", got, want)
	}
	if len(md.KeyValueMetadata) != 3 || md.KeyValueMetadata[0].Key != "pqsink.version" || md.KeyValueMetadata[2].Key != "pqsink.kafka.last_offset" {
		t.Errorf("Close's metadata: %v", md.KeyValueMetadata)
	}
	w.SetKeyValue("after", "close") // no effect

	var second bytes.Buffer
	if err := w.Reset(&second); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteRowGroup(g); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Close(); err != nil {
		t.Fatal(err)
	}
	want = map[string]string{"pqsink.version": "test", "team": "a"}
	if got := footerKV(t, second.Bytes()); !reflect.DeepEqual(got, want) {
		t.Errorf("after Reset: %v, want %v", got, want)
	}
	if *md.KeyValueMetadata[1].Value != "b" {
		t.Errorf("the first file's metadata changed after Reset: %v", md.KeyValueMetadata)
	}
}
