package writer_test

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/rowgroup"
	"github.com/pqsink/pqsink/schema"
	"github.com/pqsink/pqsink/writer"
)

// chunkOf writes rows of one column with opts and returns the column
// chunk's metadata.
func chunkOf(t *testing.T, s *schema.Schema, fill func(c *rowgroup.Column, i int), rows int, opts ...writer.Option) *meta.ColumnMetaData {
	t.Helper()
	g := rowgroup.New(s)
	for i := range rows {
		fill(g.Column(0), i)
		g.EndRow()
	}
	var out bytes.Buffer
	w, err := writer.New(&out, s, append([]writer.Option{writer.Compression(meta.CodecZstd, 0)}, opts...)...)
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
	return md.RowGroups[0].Columns[0].MetaData
}

func hexString(r *rand.Rand, dst []byte) []byte {
	v := r.Uint64()
	for range 16 {
		dst = append(dst, "0123456789abcdef"[v&15])
		v >>= 4
	}
	return dst
}

// TestAdaptiveChoosesTheSmallest wants the adaptive choice in data page v2
// no larger than any single encoding it may choose, dictionary included,
// on the data where a sample of a few kilobytes misleads: random hex
// strings (zstd finds costly short matches only in a page-sized window),
// random doubles, digits, timestamps. Floating point has no candidate
// besides PLAIN (BYTE_STREAM_SPLIT is only given, see adaptiveCandidates).
func TestAdaptiveChoosesTheSmallest(t *testing.T) {
	const rows = 200_000
	tests := []struct {
		name   string
		schema string
		encs   []meta.Encoding
		fill   func(r *rand.Rand) func(c *rowgroup.Column, i int)
	}{
		{"hex strings", `message m { required binary s (STRING); }`,
			[]meta.Encoding{meta.EncodingPlain, meta.EncodingDeltaLengthByteArray, meta.EncodingDeltaByteArray},
			func(r *rand.Rand) func(*rowgroup.Column, int) {
				var buf []byte
				return func(c *rowgroup.Column, _ int) { buf = hexString(r, buf[:0]); c.AppendBytes(0, buf) }
			}},
		{"random doubles", `message m { required double d; }`,
			[]meta.Encoding{meta.EncodingPlain},
			func(r *rand.Rand) func(*rowgroup.Column, int) {
				return func(c *rowgroup.Column, _ int) { c.AppendDouble(0, r.Float64()) }
			}},
		{"cents", `message m { required double d; }`,
			[]meta.Encoding{meta.EncodingPlain},
			func(r *rand.Rand) func(*rowgroup.Column, int) {
				return func(c *rowgroup.Column, _ int) { c.AppendDouble(0, float64(r.IntN(1_000_000))/100) }
			}},
		{"digits", `message m { required int32 level; }`,
			[]meta.Encoding{meta.EncodingPlain, meta.EncodingDeltaBinaryPacked},
			func(r *rand.Rand) func(*rowgroup.Column, int) {
				return func(c *rowgroup.Column, _ int) { c.AppendInt32(0, int32(r.IntN(10))) }
			}},
		{"timestamps", `message m { required int64 ts; }`,
			[]meta.Encoding{meta.EncodingPlain, meta.EncodingDeltaBinaryPacked},
			func(r *rand.Rand) func(*rowgroup.Column, int) {
				ts := int64(1_700_000_000_000_000)
				return func(c *rowgroup.Column, _ int) { ts += int64(r.IntN(1000)); c.AppendInt64(0, ts) }
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := schema.MustParse(tt.schema)
			path := s.Leaves()[0].PathString()
			fill := func() func(*rowgroup.Column, int) { return tt.fill(rand.New(rand.NewPCG(1, 2))) }
			v2 := writer.DataPageVersion(2)
			adaptive := chunkOf(t, s, fill(), rows, v2)
			sizes := map[string]int64{"dictionary": chunkOf(t, s, fill(), rows, v2, writer.AdaptiveEncoding(false)).TotalCompressedSize}
			for _, e := range tt.encs {
				sizes[e.String()] = chunkOf(t, s, fill(), rows, v2, writer.Dictionary(false), writer.ColumnEncoding(path, e)).TotalCompressedSize
			}
			for name, size := range sizes {
				// A few pages' headers of slack: the trial pays for the
				// dictionary page on the first page's values only.
				if adaptive.TotalCompressedSize > size+size/100 {
					t.Errorf("adaptive: %d bytes (%v), %s alone: %d", adaptive.TotalCompressedSize, pageEncodings(adaptive), name, size)
				}
			}
		})
	}
}

// TestAdaptiveRevisits writes a column whose data changes in the middle of
// the chunk, from timestamps (DELTA_BINARY_PACKED) to a few large values
// in random order (PLAIN, which zstd shrinks to repeats): the pages after
// the change must leave the first choice.
func TestAdaptiveRevisits(t *testing.T) {
	s := schema.MustParse(`message m { required int64 v; }`)
	const rows = 200_000
	fill := func() func(*rowgroup.Column, int) {
		r := rand.New(rand.NewPCG(3, 4))
		ts := int64(1_700_000_000_000_000)
		var few [16]int64
		for i := range few {
			few[i] = int64(r.Uint64() >> 1)
		}
		return func(c *rowgroup.Column, i int) {
			if i < rows/2 {
				ts += int64(r.IntN(1000))
				c.AppendInt64(0, ts)
				return
			}
			c.AppendInt64(0, few[r.IntN(len(few))])
		}
	}
	md := chunkOf(t, s, fill(), rows, writer.DataPageVersion(2), writer.Dictionary(false))
	encs := pageEncodings(md)
	if encs[meta.EncodingDeltaBinaryPacked] == 0 || encs[meta.EncodingPlain] == 0 {
		t.Fatalf("pages: %v, want DELTA_BINARY_PACKED for the first half and PLAIN after", encs)
	}
	for _, e := range []meta.Encoding{meta.EncodingPlain, meta.EncodingDeltaBinaryPacked} {
		if single := chunkOf(t, s, fill(), rows, writer.DataPageVersion(2), writer.Dictionary(false), writer.AdaptiveEncoding(false), writer.ColumnEncoding("v", e)); md.TotalCompressedSize >= single.TotalCompressedSize {
			t.Errorf("%d bytes, no smaller than %s alone: %d", md.TotalCompressedSize, e, single.TotalCompressedSize)
		}
	}
}

// TestAdaptiveV1Encodings: in data page v1 the adaptive choice keeps to the
// encodings parquet-java's v1 writer uses (PLAIN and the dictionary, RLE
// for booleans), on data where a delta or BYTE_STREAM_SPLIT would be
// smaller; a column given an encoding gets it in v1 too.
func TestAdaptiveV1Encodings(t *testing.T) {
	const rows = 50_000
	tests := []struct {
		schema string
		fill   func(r *rand.Rand) func(c *rowgroup.Column, i int)
	}{
		{`message m { required binary s (STRING); }`, func(r *rand.Rand) func(*rowgroup.Column, int) {
			var buf []byte
			return func(c *rowgroup.Column, i int) {
				buf = append(hexString(r, append(buf[:0], "customer/eu-west/"...)), byte('a'+i%26))
				c.AppendBytes(0, buf)
			}
		}},
		{`message m { required int64 ts; }`, func(r *rand.Rand) func(*rowgroup.Column, int) {
			ts := int64(1_700_000_000_000_000)
			return func(c *rowgroup.Column, _ int) { ts += int64(r.IntN(1000)); c.AppendInt64(0, ts) }
		}},
		{`message m { required double d; }`, func(r *rand.Rand) func(*rowgroup.Column, int) {
			return func(c *rowgroup.Column, _ int) { c.AppendDouble(0, r.Float64()) }
		}},
		{`message m { required boolean b; }`, func(r *rand.Rand) func(*rowgroup.Column, int) {
			return func(c *rowgroup.Column, i int) { c.AppendBool(0, i%1000 < 990) }
		}},
	}
	v1 := map[meta.Encoding]bool{meta.EncodingPlain: true, meta.EncodingRLEDictionary: true, meta.EncodingRLE: true}
	for _, tt := range tests {
		s := schema.MustParse(tt.schema)
		fill := func() func(*rowgroup.Column, int) { return tt.fill(rand.New(rand.NewPCG(7, 8))) }
		for _, dict := range []bool{true, false} {
			md := chunkOf(t, s, fill(), rows, writer.Dictionary(dict && s.Leaves()[0].Physical != meta.TypeBoolean), writer.DictionaryPageSize(4<<10))
			for e := range pageEncodings(md) {
				if !v1[e] {
					t.Errorf("%s, dictionary %v: a v1 data page in %s", tt.schema, dict, e)
				}
			}
		}
	}
	s := schema.MustParse(`message m { required int64 ts; }`)
	md := chunkOf(t, s, func(c *rowgroup.Column, i int) { c.AppendInt64(0, int64(i)) }, rows,
		writer.Dictionary(false), writer.ColumnEncoding("ts", meta.EncodingDeltaBinaryPacked))
	if encs := pageEncodings(md); encs[meta.EncodingDeltaBinaryPacked] == 0 {
		t.Errorf("ColumnEncoding DELTA_BINARY_PACKED in v1: pages %v", encs)
	}
}

// pageEncodings counts a chunk's data pages by encoding.
func pageEncodings(md *meta.ColumnMetaData) map[meta.Encoding]int32 {
	m := map[meta.Encoding]int32{}
	for _, st := range md.EncodingStats {
		if st.PageType != meta.PageDictionary {
			m[st.Encoding] += st.Count
		}
	}
	return m
}
