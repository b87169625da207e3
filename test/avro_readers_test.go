package test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"io"
	"math/big"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/klauspost/compress/flate"
	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/linkedin/goavro/v2"

	"github.com/pqsink/pqsink/convert"
	"github.com/pqsink/pqsink/internal/testutil"
	"github.com/pqsink/pqsink/internal/testutil/duckdb"
	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/rowgroup"
	"github.com/pqsink/pqsink/rowgroup/avrorow"
	"github.com/pqsink/pqsink/schema/avro"
	"github.com/pqsink/pqsink/test/crossread"
	"github.com/pqsink/pqsink/writer"
)

// allTypesSchema is schema/avro/testdata/all_types.avsc: every Avro type
// and logical type, unions of every shape, nested arrays and maps, an
// unknown logical type and an invalid one.
func allTypesSchema(t testing.TB) *avro.Schema {
	t.Helper()
	text, err := os.ReadFile(filepath.Join(testutil.RepoRoot(t), "schema", "avro", "testdata", "all_types.avsc"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := avro.Parse(string(text))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// allTypesRecord returns record i of the all-types test data as goavro
// native values (logical types as their underlying values), and what
// DuckDB must read back from it with allTypesQuery, as JSON.
func allTypesRecord(i int) (map[string]any, map[string]any) {
	str := func(v int64) string { return strconv.FormatInt(v, 10) }
	l := int64(i)*1_000_003_007 - 7_000_000_000_000
	f := float32(i) + 0.25
	d := float64(i)*1.5 - 3
	by := []byte{byte(i), 0, 0xff, byte(i * 7)}
	s := fmt.Sprintf("héllo %d ✓", i)
	colors := []string{"RED", "GREEN", "BLUE"}
	fx := []byte{1, 2, 3, byte(i)}
	var arr []any
	var arrWant []any
	for j := range i % 4 {
		arr = append(arr, int64(j*i))
		arrWant = append(arrWant, str(int64(j*i)))
	}
	m := map[string]any{}
	var mWant []any
	if i%3 != 0 {
		m["k"] = float64(i) / 4
		mWant = append(mWant, map[string]any{"key": "k", "value": float64(i) / 4})
	}
	var opt any
	var optWant any
	if i%2 == 0 {
		opt = goavro.Union("string", "opt"+str(int64(i)))
		optWant = "opt" + str(int64(i))
	}
	var optr any = goavro.Union("string", "r")
	var optrWant any = "r"
	if i%5 == 0 {
		optr, optrWant = nil, nil
	}
	var u, uWant any
	switch i % 4 {
	case 1:
		u = goavro.Union("int", int32(i))
		uWant = map[string]any{"member0": float64(i), "member1": nil, "member2": nil}
	case 2:
		u = goavro.Union("string", "u")
		uWant = map[string]any{"member0": nil, "member1": "u", "member2": nil}
	case 3:
		u = goavro.Union("com.example.Inner", map[string]any{"x": int32(-i)})
		uWant = map[string]any{"member0": nil, "member1": nil, "member2": map[string]any{"x": float64(-i)}}
	}
	u2, u2Want := goavro.Union("long", int64(i)<<40), map[string]any{"member0": str(int64(i) << 40), "member1": nil}
	if i%2 == 1 {
		u2, u2Want = goavro.Union("boolean", true), map[string]any{"member0": nil, "member1": true}
	}
	var a, aWant []any
	for j := range i % 3 {
		if j == 1 {
			a, aWant = append(a, nil), append(aWant, nil)
			continue
		}
		a = append(a, goavro.Union("com.example.Inner", map[string]any{"x": int32(j)}))
		aWant = append(aWant, map[string]any{"x": float64(j)})
	}
	mm := map[string]any{}
	var mmWant []any
	if i%2 == 1 {
		mm["x"] = []any{"p", "q"}
		mmWant = append(mmWant, map[string]any{"key": "x", "value": []any{"p", "q"}})
	}
	// decimal(20,4) on bytes: unscaled values up to 20 digits, negative too.
	unscaled := new(big.Int).Mul(big.NewInt(int64(i)-25), big.NewInt(1_000_000_007_000))
	unscaled.Mul(unscaled, big.NewInt(9_999_999))
	decB := twosComplement(unscaled, 0)
	decF := twosComplement(big.NewInt(int64(i)*123_456_789_012-99), 8)
	uuid := fmt.Sprintf("%08x-0000-4000-8000-%012x", i, i*977)
	uuidF := make([]byte, 16)
	binary.BigEndian.PutUint64(uuidF, uint64(i)*0x0101010101010101)
	binary.BigEndian.PutUint64(uuidF[8:], ^uint64(i))
	dur := make([]byte, 12)
	binary.LittleEndian.PutUint32(dur, uint32(i))
	binary.LittleEndian.PutUint32(dur[4:], uint32(i*2))
	binary.LittleEndian.PutUint32(dur[8:], uint32(i*1001))
	date := int32(i*400 - 10000)
	tmi := int32(i * 3_600_123 % 86_400_000)
	tmu := int64(i) * 3_600_123_457 % 86_400_000_000
	tsm := int64(1_700_000_000_123) + int64(i)*86_400_001
	tsu := tsm*1000 + 456
	tsn := tsu*1000 + 789
	native := map[string]any{
		"n": nil, "b": i%2 == 0, "i": int32(i - 20), "l": l, "f": f, "d": d, "by": by, "s": s,
		"e": colors[i%3], "fx": fx, "arr": arr, "m": m, "opt": opt, "optr": optr, "u": u, "u2": u2,
		"nested": map[string]any{"a": a, "mm": mm},
		"dec_b":  decB, "dec_f": decF, "uuid_s": uuid, "uuid_f": uuidF,
		"date": date, "tmi": tmi, "tmu": tmu, "tsm": tsm, "tsu": tsu, "tsn": tsn,
		"ltsm": tsm, "ltsu": tsu, "ltsn": tsn, "dur": dur, "unk": "u" + s, "bad_dec": by,
	}
	if arr == nil {
		native["arr"] = []any{}
	}
	if a == nil {
		native["nested"].(map[string]any)["a"] = []any{}
	}
	uuidFText := fmt.Sprintf("%x-%x-%x-%x-%x", uuidF[0:4], uuidF[4:6], uuidF[6:8], uuidF[8:10], uuidF[10:16])
	want := map[string]any{
		"n": true, "b": i%2 == 0, "i": float64(i - 20), "l": str(l), "f": float64(f), "d": d,
		"by": base64.StdEncoding.EncodeToString(by), "s": s, "e": colors[i%3],
		"fx": base64.StdEncoding.EncodeToString(fx), "arr": orEmpty(arrWant), "m": orEmpty(mWant),
		"opt": optWant, "optr": optrWant, "u": uWant, "u2": u2Want,
		"nested": map[string]any{"a": orEmpty(aWant), "mm": orEmpty(mmWant)},
		"dec_b":  decimalText(unscaled, 4), "dec_f": decimalText(big.NewInt(int64(i)*123_456_789_012-99), 2),
		"uuid_s": uuid, "uuid_f": uuidFText,
		"date": str(int64(date)), "tmi": str(int64(tmi) * 1000), "tmu": str(tmu),
		"tsm": str(tsm), "tsu": str(tsu),
		// DuckDB reads TIMESTAMP(NANOS,true) as TIMESTAMP WITH TIME ZONE,
		// which holds microseconds: it drops the last three digits, which
		// the file has (arrow-go reads them; the local one keeps them).
		"tsn": str(tsn / 1000 * 1000), "ltsm": str(tsm), "ltsu": str(tsu), "ltsn": str(tsn),
		"dur": map[string]any{"months": float64(i), "days": float64(i * 2), "micros": str(int64(i*1001) * 1000)},
		"unk": "u" + s, "bad_dec": base64.StdEncoding.EncodeToString(by),
	}
	return native, want
}

func orEmpty(v []any) []any {
	if v == nil {
		return []any{}
	}
	return v
}

// allTypesQuery reads a file of the all-types schema in forms that compare
// exactly: 64-bit integers and decimals as exact text, timestamps as
// integers in their unit, times as intervals from midnight.
const allTypesQuery = `SELECT n IS NULL AS n, b, i, l, f, d, "by", s, e::VARCHAR AS e, fx, arr, m, opt, optr, u, u2, nested,
  dec_b::VARCHAR AS dec_b, dec_f::VARCHAR AS dec_f, uuid_s::VARCHAR AS uuid_s, uuid_f::VARCHAR AS uuid_f,
  ("date" - DATE '1970-01-01') AS "date", datediff('microsecond', TIME '00:00:00', tmi::TIME) AS tmi,
  datediff('microsecond', TIME '00:00:00', tmu::TIME) AS tmu,
  epoch_ms(tsm) AS tsm, epoch_us(tsu) AS tsu, epoch_ns(tsn) AS tsn,
  epoch_ms(ltsm) AS ltsm, epoch_us(ltsu) AS ltsu, epoch_ns(ltsn) AS ltsn, dur, unk, bad_dec
FROM read_parquet(%s)`

// twosComplement is the big-endian two's complement of v, in size bytes
// (0: as few as hold it).
func twosComplement(v *big.Int, size int) []byte {
	n := size
	if n == 0 {
		n = (v.BitLen()+8)/8 + 0
	}
	m := new(big.Int).Lsh(big.NewInt(1), uint(8*n))
	x := new(big.Int).Set(v)
	if x.Sign() < 0 {
		x.Add(x, m)
	}
	out := make([]byte, n)
	x.FillBytes(out)
	return out
}

func decimalText(unscaled *big.Int, scale int) string {
	s := new(big.Int).Abs(unscaled).String()
	for len(s) <= scale {
		s = "0" + s
	}
	s = s[:len(s)-scale] + "." + s[len(s)-scale:]
	if unscaled.Sign() < 0 {
		s = "-" + s
	}
	return s
}

// writeContainer writes records (goavro native values) into an Avro
// object container file, in blocks of 7 records. goavro encodes each
// record; the container framing is written here, because goavro's
// OCFWriter stores the schema it was given, and avro.Schema's goavro codec
// has no logical types (see avro.Parse).
func writeContainer(t testing.TB, path string, s *avro.Schema, codec string, records []map[string]any) {
	t.Helper()
	var bins [][]byte
	for i, r := range records {
		b, err := s.Codec().BinaryFromNative(nil, r)
		if err != nil {
			t.Fatalf("record %d: goavro: %v", i, err)
		}
		bins = append(bins, b)
	}
	if err := os.WriteFile(path, containerBytes(t, s.String(), codec, bins, 7), 0o644); err != nil {
		t.Fatal(err)
	}
}

// containerBytes frames binary records as an object container file. t may
// be nil (in benchmark set-up); an unknown codec then panics.
func containerBytes(t testing.TB, schemaText, codec string, records [][]byte, perBlock int) []byte {
	sync := []byte("0123456789abcdef")
	out := []byte("Obj\x01")
	out = avro.AppendLong(out, 2)
	for _, kv := range [][2]string{{"avro.schema", schemaText}, {"avro.codec", codec}} {
		out = avro.AppendLong(out, int64(len(kv[0])))
		out = append(out, kv[0]...)
		out = avro.AppendLong(out, int64(len(kv[1])))
		out = append(out, kv[1]...)
	}
	out = append(out, 0)
	out = append(out, sync...)
	for len(records) > 0 {
		n := min(perBlock, len(records))
		var raw []byte
		for _, r := range records[:n] {
			raw = append(raw, r...)
		}
		records = records[n:]
		data := compressBlock(t, codec, raw)
		out = avro.AppendLong(out, int64(n))
		out = avro.AppendLong(out, int64(len(data)))
		out = append(out, data...)
		out = append(out, sync...)
	}
	return out
}

func compressBlock(t testing.TB, codec string, raw []byte) []byte {
	switch codec {
	case "null":
		return raw
	case "deflate":
		var b bytes.Buffer
		w, _ := flate.NewWriter(&b, flate.DefaultCompression)
		w.Write(raw)
		w.Close()
		return b.Bytes()
	case "snappy":
		out := snappy.Encode(nil, raw)
		return binary.BigEndian.AppendUint32(out, crc32.ChecksumIEEE(raw))
	case "zstandard":
		enc, _ := zstd.NewWriter(nil)
		defer enc.Close()
		return enc.EncodeAll(raw, nil)
	}
	if t == nil {
		panic("no codec " + codec)
	}
	t.Fatalf("no codec %s", codec)
	return nil
}

// TestAvroAllTypesReaders converts container files of every codec, holding every Avro type and logical type, and reads them back
// with DuckDB (values, decimals exact, timestamps to the unit) and with
// arrow-go (every column chunk's levels and values equal to the row group
// the compiled decoder builds from the same records).
func TestAvroAllTypesReaders(t *testing.T) {
	s := allTypesSchema(t)
	const rows = 60
	var natives []map[string]any
	var wants []map[string]any
	for i := range rows {
		n, w := allTypesRecord(i)
		natives = append(natives, n)
		wants = append(wants, w)
	}
	// The row group the decoder builds from goavro's binary encoding.
	ps, err := s.Parquet()
	if err != nil {
		t.Fatal(err)
	}
	g := rowgroup.New(ps)
	dec, err := avrorow.NewDecoder(g, s)
	if err != nil {
		t.Fatal(err)
	}
	b, err := rowgroup.NewBuilder(g, dec)
	if err != nil {
		t.Fatal(err)
	}
	for i, n := range natives {
		bin, err := s.Codec().BinaryFromNative(nil, n)
		if err != nil {
			t.Fatalf("record %d: goavro: %v", i, err)
		}
		if err := b.Append(bin, nil); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
	}
	if err := g.Check(); err != nil {
		t.Fatal(err)
	}
	wantChunks := crossread.FromRowGroup(g)

	db := duckdb.Start(t)
	dir := t.TempDir()
	for _, codec := range []string{"null", "deflate", "snappy", "zstandard"} {
		t.Run(codec, func(t *testing.T) {
			in := filepath.Join(dir, codec+".avro")
			out := filepath.Join(dir, codec+".parquet")
			writeContainer(t, in, s, codec, natives)
			st := convertAvroFile(t, in, out, writer.PageRowLimit(16))

			res := db.Query(t, fmt.Sprintf(allTypesQuery, duckdb.Quote(out)))
			if len(res.Rows) != rows {
				t.Fatalf("duckdb read %d rows, want %d", len(res.Rows), rows)
			}
			for i, row := range res.Rows {
				got := map[string]any{}
				for j, c := range res.Columns {
					got[c] = row[j]
				}
				if g, w := avroCanonJSON(t, got), avroCanonJSON(t, wants[i]); g != w {
					t.Errorf("row %d:\nduckdb %s\nwant   %s", i, g, w)
				}
			}
			arrow, err := crossread.Arrow(out)
			if err != nil {
				t.Fatal(err)
			}
			if len(arrow) != 1 {
				t.Fatalf("arrow-go read %d row groups, want 1", len(arrow))
			}
			if !reflect.DeepEqual(arrow[0], wantChunks) {
				for c := range wantChunks {
					if !reflect.DeepEqual(arrow[0][c], wantChunks[c]) {
						t.Errorf("column %s: arrow-go read\n%v\nwant\n%v", g.Column(c).Leaf.PathString(), arrow[0][c], wantChunks[c])
					}
				}
			}
			checkAvroMetadata(t, st.Metadata, s)
		})
	}
}

// canonJSON renders v with json.Number and float64 alike.
func avroCanonJSON(t testing.TB, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var x any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&x); err != nil {
		t.Fatal(err)
	}
	out, _ := json.Marshal(x)
	return string(out)
}

func convertAvroFile(t testing.TB, in, out string, wopts ...writer.Option) convert.Stats {
	t.Helper()
	f, err := os.Open(in)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	o, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	st, err := convert.RunAvro(context.Background(), f, o, convert.Options{Writer: wopts})
	if err != nil {
		t.Fatalf("convert %s: %v", in, err)
	}
	return st
}

// checkAvroMetadata: the writer schema is stored as avro.schema, as
// parquet-java does, with its docs and aliases.
func checkAvroMetadata(t testing.TB, md *meta.FileMetaData, s *avro.Schema) {
	t.Helper()
	for _, kv := range md.KeyValueMetadata {
		if kv.Key == avro.MetadataKey {
			if kv.Value == nil || *kv.Value != s.String() {
				t.Errorf("avro.schema is %v, want %s", kv.Value, s.String())
			}
			if !strings.Contains(*kv.Value, `"doc"`) {
				t.Errorf("avro.schema lost the docs: %s", *kv.Value)
			}
			return
		}
	}
	t.Errorf("no avro.schema in the key-value metadata")
}

// TestAvroJSONConvert: JSON lines in Avro's JSON encoding of a schema
// (unions as {"type": value}, bytes as code points) convert with the
// schema's Parquet schema; a line that is not of the schema follows the
// error policy.
func TestAvroJSONConvert(t *testing.T) {
	s := avro.MustParse(`{"type":"record","name":"R","fields":[{"name":"a","type":"long"},
		{"name":"u","type":["null","string"]},{"name":"b","type":"bytes"},
		{"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"}}]}`)
	in := `{"a": 9007199254740993, "u": {"string": "x"}, "b": "\u00ff\u0000", "ts": 1700000000123}
{"a": -1, "u": null, "b": "", "ts": 0}
{"a": "not a long", "u": null, "b": "", "ts": 0}
`
	out := filepath.Join(t.TempDir(), "j.parquet")
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	var rejects bytes.Buffer
	st, err := convert.RunAvroJSON(context.Background(), strings.NewReader(in), f, s, convert.Options{Errors: convert.Skip, Rejects: &rejects})
	f.Close()
	if err != nil || st.Rows != 2 || st.Skipped != 1 || !strings.Contains(rejects.String(), `"line":3`) {
		t.Fatalf("rows %d, skipped %d, %v; rejects %s", st.Rows, st.Skipped, err, rejects.String())
	}
	db := duckdb.Start(t)
	res := db.Query(t, "SELECT a, u, \"b\", epoch_ms(ts) AS ts FROM read_parquet("+duckdb.Quote(out)+")")
	got := avroCanonJSON(t, res.Rows)
	want := `[["9007199254740993","x","/wA=","1700000000123"],["-1",null,"","0"]]`
	if got != want {
		t.Errorf("duckdb read %s, want %s", got, want)
	}
	if _, err := convert.RunAvroJSON(context.Background(), strings.NewReader(in), io.Discard, s, convert.Options{}); err == nil || !strings.Contains(err.Error(), "line 3") {
		t.Errorf("fail policy: %v", err)
	}
}
