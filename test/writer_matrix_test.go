package test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/pqsink/pqsink/convert"
	"github.com/pqsink/pqsink/internal/testutil/duckdb"
	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/schema"
	"github.com/pqsink/pqsink/test/crossread"
	"github.com/pqsink/pqsink/writer"
)

// matrixCase is one file of the matrix: a schema, its input, and the writer
// options under test.
type matrixCase struct {
	name     string
	schema   *fileSchema
	seed     uint64
	rows     int
	opts     []writer.Option
	rowGroup int64 // convert.Options.RowGroupSize

	// What the metadata check expects of each column chunk.
	codec     meta.CompressionCodec
	version   int
	dict      bool                     // dictionary on
	fallback  bool                     // dictionary page size small enough to overflow
	encodings map[string]meta.Encoding // column path → non-dictionary encoding (absent: PLAIN)
	bloom     []string                 // column paths with a bloom filter

	// failures lists the readers that cannot read this file, and why.
	failures map[string]failure
}

// failure is a reader that cannot read a file: why, and a piece of the
// error it gives, so that the test notices when it starts working or fails
// for another reason.
type failure struct {
	reason string
	error  string
}

// unreadable lists encoding × leaf type combinations that a reader cannot
// decode. The matrix keeps them out of its big files (those columns stay
// PLAIN there) and writes each entry into a file of its own, where the
// readers listed must fail with the error given and the others must read
// every value.
var unreadable = []struct {
	enc      meta.Encoding
	types    []string
	failures map[string]failure
}{
	{meta.EncodingDeltaByteArray, []string{"fixed", "uuid", "f16", "decfix", "ival"}, map[string]failure{
		"arrow-go": {"arrow-go has no DELTA_BYTE_ARRAY decoder for FIXED_LEN_BYTE_ARRAY (it panics)", "panic"},
	}},
	{meta.EncodingDeltaLengthByteArray, []string{"decbin"}, map[string]failure{
		"duckdb": {"DuckDB decodes DELTA_LENGTH_BYTE_ARRAY only into VARCHAR/BLOB, not DECIMAL", "Delta Length Byte Array encoding is only supported for string/blob data"},
	}},
	{meta.EncodingByteStreamSplit, []string{"i32", "i64", "i8", "u64", "dec32", "dec64", "date", "tsus", "tns", "f16", "fixed", "uuid", "decfix", "ival"}, map[string]failure{
		"duckdb": {"DuckDB decodes BYTE_STREAM_SPLIT only for FLOAT and DOUBLE (the spec added INT32, INT64 and FIXED_LEN_BYTE_ARRAY in 2.11)", "BYTE_STREAM_SPLIT encoding is only supported for FLOAT or DOUBLE data"},
	}},
}

// unreadableBy returns the readers that cannot read type typ in encoding
// enc; the BYTE_STREAM_SPLIT entry names some of the types it covers, and
// covers every other INT32, INT64 and FIXED_LEN_BYTE_ARRAY type too.
func unreadableBy(t *leafType, enc meta.Encoding) map[string]failure {
	for _, u := range unreadable {
		if u.enc != enc {
			continue
		}
		if containsString(u.types, t.name) || enc == meta.EncodingByteStreamSplit && t.physical != meta.TypeFloat && t.physical != meta.TypeDouble {
			return u.failures
		}
	}
	return nil
}

func containsString(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// unreadableCodecs lists codecs that a reader cannot read, with the error
// it gives; the matrix writes them all the same and asserts the failure.
var unreadableCodecs = map[meta.CompressionCodec]map[string]failure{
	meta.CodecLZ4: {
		"duckdb":     {"DuckDB reads LZ4_RAW only, not the deprecated Hadoop-framed LZ4", `Unsupported compression codec "LZ4"`},
		"arrow-go":   {"arrow-go has no decoder for the deprecated LZ4 codec", "compression for LZ4 unimplemented"},
		"parquet-go": {"parquet-go has no decoder for the deprecated LZ4 codec", "unsupported compression codec: LZ4"},
	},
	meta.CodecLZ4Raw: {
		// parquet-go v0.32.0 column.go (*Column).decompress keeps its pooled
		// page buffer when the codec returns a different slice of the
		// expected length; its LZ4 codec allocates a new 3×compressed
		// buffer whenever the pooled one is smaller, so pages that compress
		// badly (random binary) come out as zeros. The bytes are right:
		// parquet-go's own LZ4 codec decodes them (TestLZ4RawPagesDecode).
		"parquet-go": {"parquet-go drops LZ4_RAW output that its codec reallocated (a parquet-go bug)", "decoding page"},
	},
}

// Sizes that make every file have several row groups and every column
// chunk several pages, with pages of both the page size and the row limit.
const (
	matrixRows     = 300
	matrixPageSize = 2048
	matrixPageRows = 37
	matrixRowGroup = 400 << 10
	tinyDictionary = 256
)

var codecs = []struct {
	name  string
	codec meta.CompressionCodec
}{
	{"uncompressed", meta.CodecUncompressed},
	{"snappy", meta.CodecSnappy},
	{"gzip", meta.CodecGzip},
	{"zstd", meta.CodecZstd},
	{"lz4raw", meta.CodecLZ4Raw},
	{"brotli", meta.CodecBrotli},
	{"lz4hadoop", meta.CodecLZ4},
}

// matrixCases combines the dimensions without the full product:
//
//   - codec × page version: every codec with both page versions, on the full
//     schema (every leaf type in every shape) with dictionary encoding, so
//     each codec meets every type, shape, and page kind (dictionary, v1, v2);
//   - encoding × type: for each non-dictionary encoding, one file with
//     dictionaries off, the encoding set on every column whose physical type
//     takes it, and one with a tiny dictionary page size so that chunks fall
//     back to that encoding mid-chunk; page versions alternate and codecs
//     rotate across these, so each encoding is read in v1 and v2 pages and
//     each type in each shape is written with each encoding that applies.
//
// A type-specific bug shows in the encoding files (every type meets every
// encoding that applies, in every shape), a codec or page-kind bug in the
// codec files, and every file has several row groups and pages per chunk.
func matrixCases(types []*leafType) []*matrixCase {
	full := matrixSchema(types, allShapes)
	var cases []*matrixCase
	seed := uint64(1)
	for _, c := range codecs {
		for _, v := range []int{1, 2} {
			mc := &matrixCase{
				name:    fmt.Sprintf("%s-v%d", c.name, v),
				schema:  full,
				seed:    seed,
				codec:   c.codec,
				version: v,
				dict:    true,
				// The writer's defaults, adaptive encodings included.
				encodings: map[string]meta.Encoding{},
				failures:  unreadableCodecs[c.codec],
			}
			seed++
			cases = append(cases, mc)
		}
	}
	encs := []struct {
		name string
		enc  meta.Encoding
		phys []meta.Type
	}{
		{"plain", meta.EncodingPlain, nil},
		{"rle", meta.EncodingRLE, []meta.Type{meta.TypeBoolean}},
		{"delta_binary_packed", meta.EncodingDeltaBinaryPacked, []meta.Type{meta.TypeInt32, meta.TypeInt64}},
		{"delta_length_byte_array", meta.EncodingDeltaLengthByteArray, []meta.Type{meta.TypeByteArray}},
		{"delta_byte_array", meta.EncodingDeltaByteArray, []meta.Type{meta.TypeByteArray, meta.TypeFixedLenByteArray}},
		{"byte_stream_split", meta.EncodingByteStreamSplit, []meta.Type{meta.TypeFloat, meta.TypeDouble, meta.TypeInt32, meta.TypeInt64, meta.TypeFixedLenByteArray}},
	}
	var readable []meta.CompressionCodec
	for _, c := range codecs {
		if unreadableCodecs[c.codec] == nil {
			readable = append(readable, c.codec)
		}
	}
	paths, leaves := full.leafPaths()
	for i, e := range encs {
		for _, fb := range []bool{false, true} {
			mc := &matrixCase{
				schema:    full,
				seed:      seed,
				codec:     readable[(i*2+btoi(fb))%len(readable)],
				version:   1 + (i+btoi(fb))%2,
				dict:      fb,
				fallback:  fb,
				encodings: map[string]meta.Encoding{},
				opts:      []writer.Option{writer.AdaptiveEncoding(false)},
			}
			seed++
			mc.failures = unreadableCodecs[mc.codec]
			mc.name = "enc-" + e.name
			if fb {
				mc.name = "fallback-" + e.name
			}
			for j, p := range paths {
				lt := leaves[j].leaf
				if (e.phys == nil || containsType(e.phys, lt.physical)) && unreadableBy(lt, e.enc) == nil {
					mc.encodings[p] = e.enc
				}
			}
			cases = append(cases, mc)
		}
	}
	// BROTLI v2 pages with required columns only: every values section
	// compressed (all-null pages store theirs uncompressed).
	cases = append(cases, &matrixCase{
		name:    "brotli-v2-required",
		schema:  requiredSchema(types),
		seed:    seed,
		codec:   meta.CodecBrotli,
		version: 2,
		dict:    true,
		opts:    []writer.Option{writer.AdaptiveEncoding(false)},
	})
	seed++
	// BSON in every shape: DuckDB refuses the whole file.
	cases = append(cases, &matrixCase{
		name:    "bson",
		schema:  bsonSchema(),
		seed:    seed,
		codec:   meta.CodecZstd,
		version: 2,
		dict:    true,
		failures: map[string]failure{
			"duckdb": {"DuckDB does not know the BSON converted type and refuses the file", "Unsupported converted type (20)"},
		},
	})
	seed++
	// Each unreadable entry in a file of its own, read by all.
	for _, u := range unreadable {
		var ts []*leafType
		for _, n := range u.types {
			ts = append(ts, typeNamed(n))
		}
		s := matrixSchema(ts, allShapes)
		mc := &matrixCase{
			name:      "unreadable-" + strings.ToLower(u.enc.String()),
			schema:    s,
			seed:      seed,
			codec:     meta.CodecSnappy,
			version:   1,
			encodings: map[string]meta.Encoding{},
			failures:  u.failures,
			opts:      []writer.Option{writer.AdaptiveEncoding(false)},
		}
		seed++
		paths, leaves := s.leafPaths()
		for j, p := range paths {
			if containsString(u.types, leaves[j].leaf.name) {
				mc.encodings[p] = u.enc
			}
		}
		cases = append(cases, mc)
	}
	return cases
}

// requiredSchema is the row number and every type as a required field.
func requiredSchema(types []*leafType) *fileSchema {
	s := &fileSchema{fields: []*node{leafNode("row", "required", typeNamed("i64"))}}
	for _, t := range types {
		if t.kind != "BSON" { // DuckDB cannot open files with BSON
			s.fields = append(s.fields, shaped(shapeRequired, t))
		}
	}
	return s
}

// bsonSchema is the row number and BSON in every shape.
func bsonSchema() *fileSchema {
	s := &fileSchema{fields: []*node{leafNode("row", "required", typeNamed("i64"))}}
	for _, sh := range allShapes {
		s.fields = append(s.fields, shaped(sh, typeNamed("bson")))
	}
	return s
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func containsType(ts []meta.Type, t meta.Type) bool {
	for _, x := range ts {
		if x == t {
			return true
		}
	}
	return false
}

// writerOptions turns the case into writer options.
func (mc *matrixCase) writerOptions() []writer.Option {
	opts := []writer.Option{
		writer.Compression(mc.codec, 0),
		writer.DataPageVersion(mc.version),
		writer.PageSize(matrixPageSize),
		writer.PageRowLimit(matrixPageRows),
		writer.Dictionary(mc.dict),
	}
	if mc.fallback {
		opts = append(opts, writer.DictionaryPageSize(tinyDictionary))
	}
	for p, e := range mc.encodings {
		opts = append(opts, writer.ColumnEncoding(p, e))
	}
	for _, p := range mc.bloom {
		opts = append(opts, writer.BloomFilter(p, 0.01))
	}
	return append(opts, mc.opts...)
}

// written is a file of the matrix with its input.
type written struct {
	path  string
	lines [][]byte
	want  []map[string]any
	stats convert.Stats
}

// writeCase generates the input and converts it with pqsink.
func writeCase(t *testing.T, mc *matrixCase) *written {
	t.Helper()
	rows := mc.rows
	if rows == 0 {
		rows = matrixRows
	}
	w := &written{lines: genInput(mc.schema, mc.seed, rows)}
	for i, l := range w.lines {
		c, err := canonRecord(mc.schema, l)
		if err != nil {
			t.Fatalf("input line %d: %v", i+1, err)
		}
		w.want = append(w.want, c)
	}
	s, err := schema.Parse(mc.schema.String())
	if err != nil {
		t.Fatalf("schema: %v\n%s", err, mc.schema)
	}
	rg := mc.rowGroup
	if rg == 0 {
		rg = matrixRowGroup
	}
	var out bytes.Buffer
	w.stats, err = convert.Run(context.Background(), bytes.NewReader(bytes.Join(w.lines, []byte("\n"))), &out, convert.Options{
		Schema:       s,
		RowGroupSize: rg,
		Writer:       mc.writerOptions(),
	})
	if err != nil {
		t.Fatalf("convert: %v", err)
	}
	if w.stats.Rows != int64(rows) {
		t.Fatalf("convert wrote %d rows, want %d", w.stats.Rows, rows)
	}
	w.path = filepath.Join(t.TempDir(), mc.name+".parquet")
	if err := os.WriteFile(w.path, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return w
}

// compareRows reports the rows and fields where a reader disagrees with the
// input.
func compareRows(t *testing.T, readerName string, s *fileSchema, want, got []map[string]any) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d rows, want %d", readerName, len(got), len(want))
		return
	}
	bad := 0
	for i := range want {
		for _, f := range s.fields {
			w, _ := json.Marshal(want[i][f.name])
			g, _ := json.Marshal(got[i][f.name])
			if !bytes.Equal(w, g) {
				if bad < 12 {
					t.Errorf("%s: row %d field %s:\n got %s\nwant %s", readerName, i, f.name, g, w)
				}
				bad++
			}
		}
	}
	if bad >= 12 {
		t.Errorf("%s: %d differing fields in all", readerName, bad)
	}
}

// TestWriterMatrix writes every case of the matrix and has the three
// readers read it back; the values must equal the input's, and the
// metadata what was asked for.
func TestWriterMatrix(t *testing.T) {
	db := duckdb.Start(t)
	readers := []reader{duckReader(db), arrowReader, pqgoReader}
	t.Run("group", func(t *testing.T) {
		for _, mc := range matrixCases(leafTypes()) {
			t.Run(mc.name, func(t *testing.T) {
				t.Parallel()
				w := writeCase(t, mc)
				for _, r := range readers {
					got, err := r.read(mc.schema, w.path)
					if f, ok := mc.failures[r.name]; ok {
						switch {
						case err == nil:
							t.Errorf("%s now reads this file, which the unreadable table says it cannot (%s): take it off the table", r.name, f.reason)
						case !strings.Contains(err.Error(), f.error):
							t.Errorf("%s fails with %q, not for the known reason (%s)", r.name, firstLine(err), f.reason)
						}
						continue
					}
					if err != nil {
						t.Errorf("%s: %v", r.name, firstLine(err))
						continue
					}
					want := w.want
					if r.degrade != nil {
						want = degradeRows(mc.schema, want, r.degrade)
					}
					compareRows(t, r.name, mc.schema, want, got)
				}
				readBackByPQSink(t, mc, w.path)
			})
		}
	})
}

func firstLine(err error) string {
	s := err.Error()
	if i := strings.IndexByte(s, '\n'); i >= 0 && i < 600 {
		return s[:i] + " ..."
	}
	if len(s) > 600 {
		return s[:600] + " ..."
	}
	return s
}

// TestWriterDefaultsReadableByDuckDB writes binary DECIMAL columns with the
// writer's default options, which every reader should decode. DuckDB (1.5)
// decodes DELTA_LENGTH_BYTE_ARRAY only into VARCHAR and BLOB, so the
// adaptive encoding choice must not offer it to binary DECIMAL.
func TestWriterDefaultsReadableByDuckDB(t *testing.T) {
	db := duckdb.Start(t)
	s := &fileSchema{fields: []*node{leafNode("row", "required", typeNamed("i64"))}}
	for _, sh := range allShapes {
		s.fields = append(s.fields, shaped(sh, typeNamed("decbin")))
	}
	mc := &matrixCase{name: "defaults-decbin", schema: s, seed: 99, codec: meta.CodecSnappy, version: 1, dict: true}
	w := writeCase(t, mc)
	for _, r := range []reader{duckReader(db), arrowReader, pqgoReader} {
		got, err := r.read(s, w.path)
		if err != nil {
			t.Errorf("%s: %v", r.name, firstLine(err))
			continue
		}
		compareRows(t, r.name, s, w.want, got)
	}
}

// TestWriterDuckDBTypes checks the DuckDB type of every leaf type, which
// the conversions of duckLeaf rely on.
func TestWriterDuckDBTypes(t *testing.T) {
	db := duckdb.Start(t)
	s := requiredSchema(leafTypes())
	mc := &matrixCase{name: "types", schema: s, seed: 5, codec: meta.CodecSnappy, version: 1, dict: true,
		opts: []writer.Option{writer.AdaptiveEncoding(false)}}
	w := writeCase(t, mc)
	res := db.Query(t, "DESCRIBE SELECT * FROM read_parquet("+duckdb.Quote(w.path)+")")
	if len(res.Rows) != len(s.fields) {
		t.Fatalf("DuckDB describes %d columns, want %d", len(res.Rows), len(s.fields))
	}
	for _, r := range res.Rows[1:] {
		name := strings.TrimPrefix(r[0].(string), "req_")
		if want := duckTypes[name]; r[1] != want {
			t.Errorf("%s: DuckDB type %v, want %s", name, r[1], want)
		}
	}
}

// readBackByPQSink checks that pqsink's own reader sees, column chunk by
// column chunk, the same levels and values as an independent reader that
// the matrix has just compared with the input (parquet-go, or arrow-go for
// the files parquet-go cannot read). No independent reader takes Hadoop
// LZ4, so such a file is compared with its SNAPPY twin: the same input,
// written with the same page layout, read by parquet-go.
func readBackByPQSink(t *testing.T, mc *matrixCase, path string) {
	t.Helper()
	got, err := crossread.PQSink(path)
	if err != nil {
		t.Fatalf("pqsink reader: %v", err)
	}
	indep := path
	if mc.codec == meta.CodecLZ4 {
		twin := *mc
		twin.codec = meta.CodecSnappy
		indep = writeCase(t, &twin).path
	}
	want, err := crossread.ParquetGo(indep)
	name := "parquet-go"
	if err != nil {
		want, err = crossread.Arrow(indep)
		name = "arrow-go"
	}
	if err != nil {
		t.Fatalf("no independent reader to compare the pqsink reader with: %v", err)
	}
	if !reflect.DeepEqual(got, want) {
		for r := range want {
			for c := range want[r] {
				if r < len(got) && c < len(got[r]) && !reflect.DeepEqual(got[r][c], want[r][c]) {
					t.Errorf("pqsink reader and %s differ in row group %d column %d", name, r, c)
				}
			}
		}
		if len(got) != len(want) {
			t.Errorf("pqsink reader: %d row groups, %s: %d", len(got), name, len(want))
		}
	}
}
