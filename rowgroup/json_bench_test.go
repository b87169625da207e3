package rowgroup

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/pqsink/pqsink/schema"
)

const clickSchema = `message click {
  required int64 event_id;
  required int64 ts (TIMESTAMP(MILLIS,true));
  required binary user_id (STRING);
  optional binary session_id (STRING);
  required binary event_type (ENUM);
  optional binary url (STRING);
  optional binary referrer (STRING);
  optional int32 status (INTEGER(16,false));
  optional double duration_ms;
  optional boolean is_mobile;
  optional fixed_len_byte_array(16) request_id (UUID);
  optional int64 price (DECIMAL(18,4));
}`

const clickLine = `{"event_id":123456789,"ts":"2024-05-01T12:34:56.789Z","user_id":"u-48213","session_id":"s-9f8e7d",` +
	`"event_type":"click","url":"https://shop.example.com/p/12345?ref=home","referrer":"https://www.google.com/",` +
	`"status":200,"duration_ms":153.25,"is_mobile":true,"request_id":"123e4567-e89b-12d3-a456-426614174000","price":"19.9900"}`

const orderSchema = `message order {
  required int64 id;
  required group customer {
    required binary name (STRING);
    optional binary email (STRING);
    optional group address { optional binary city (STRING); optional binary zip (STRING); }
  }
  optional group items (LIST) { repeated group list { required group element {
    required binary sku (STRING);
    required int32 qty;
    optional int64 price (DECIMAL(12,2));
    optional group tags (LIST) { repeated group list { optional binary element (STRING); } }
  } } }
  optional group attrs (MAP) { repeated group key_value { required binary key (STRING); optional binary value (STRING); } }
  optional group extra (VARIANT(1)) { required binary metadata; required binary value; }
}`

const orderLine = `{"id":998877,"customer":{"name":"Ada Lovelace","email":"ada@example.com","address":{"city":"London","zip":"N1"}},` +
	`"items":[{"sku":"A-1","qty":2,"price":12.50,"tags":["new","sale"]},{"sku":"B-22","qty":1,"price":"3.99","tags":[]},` +
	`{"sku":"C-333","qty":10,"tags":null}],"attrs":{"channel":"web","coupon":null,"campaign":"spring"},` +
	`"extra":{"source":"app","ab":[1,2,3],"score":0.75}}`

func TestJSONShredAllocs(t *testing.T) {
	for _, tt := range []struct{ name, schema, line string }{
		{"clickstream", clickSchema, clickLine},
		{"nested", orderSchema, orderLine},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g, sh := newShredder(t, tt.schema)
			line := []byte(tt.line)
			if err := sh.Shred(line); err != nil {
				t.Fatal(err)
			}
			allocs := testing.AllocsPerRun(200, func() {
				g.Reset()
				if err := sh.Shred(line); err != nil {
					t.Fatal(err)
				}
			})
			if allocs != 0 {
				t.Errorf("%v allocations per record in the steady state, want 0", allocs)
			}
		})
	}
}

// convertSchema and convertLines are the records of benchmarks.Clicks,
// which `pqsink convert` is measured on against DuckDB.
const convertSchema = `message click {
  required binary event_id (STRING);
  required int64 user_id;
  required binary session_id (STRING);
  required binary event_type (STRING);
  required binary page_url (STRING);
  optional binary referrer (STRING);
  required binary country (STRING);
  required binary device (STRING);
  required int64 ts (TIMESTAMP(MICROS,true));
  optional int32 duration_ms;
  required double price;
  required boolean is_bot;
}`

var convertLines = []string{
	`{"event_id":"9dcec3ad077dec6c-00000000","user_id":78442,"session_id":"s-0","event_type":"logout","page_url":"https://shop.example.com/catalog/item/1853046?ref=home","referrer":null,"country":"CAC","device":"tablet","ts":"2023-11-14T22:13:20.001538Z","duration_ms":26687,"price":449.38,"is_bot":false}`,
	`{"event_id":"1f173e9663be1e9d-00000001","user_id":39633,"session_id":"s-0","event_type":"logout","page_url":"https://shop.example.com/catalog/item/5780870?ref=home","referrer":"https://news.ycombinator.com/","country":"CAZ","device":"desktop","ts":"2023-11-14T22:13:20.003419Z","duration_ms":null,"price":330.33,"is_bot":false}`,
	`{"event_id":"b4ed01401eaeda70-00000002","user_id":73821,"session_id":"s-0","event_type":"share","page_url":"https://shop.example.com/catalog/item/7586402?ref=home","referrer":null,"country":"CAX","device":"tablet","ts":"2023-11-14T22:13:20.004086Z","duration_ms":56832,"price":673.26,"is_bot":false}`,
}

func benchmarkShred(b *testing.B, schemaText string, lines ...string) {
	g, sh := newShredder(b, schemaText)
	data := make([][]byte, len(lines))
	size := 0
	for i, l := range lines {
		data[i] = []byte(l)
		size += len(l)
	}
	b.SetBytes(int64(size / len(lines)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if i%10000 == 0 {
			g.Reset() // a flushed row group
		}
		if err := sh.Shred(data[i%len(data)]); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}

func BenchmarkJSONShredClickstream(b *testing.B) { benchmarkShred(b, clickSchema, clickLine) }

func BenchmarkJSONShredNested(b *testing.B) { benchmarkShred(b, orderSchema, orderLine) }

// BenchmarkJSONShredConvert shreds the records of the convert benchmark.
func BenchmarkJSONShredConvert(b *testing.B) { benchmarkShred(b, convertSchema, convertLines...) }

// BenchmarkJSONUnmarshalClickstream is the baseline of decoding the same
// record with encoding/json into map[string]any, which the shredder avoids.
func BenchmarkJSONUnmarshalClickstream(b *testing.B) {
	data := []byte(clickLine)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		var m map[string]any
		if err := json.Unmarshal(data, &m); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}

// benchmarkBuilder builds rows of the convert benchmark's records through
// a Builder, with the Kafka envelope beside the payload or without it
// (then the same as Shred), and reports ns/row.
func benchmarkBuilder(b *testing.B, envelope bool) {
	s := schema.MustParse(convertSchema)
	if envelope {
		s = withEnvelope(b, convertSchema)
	}
	g := New(s)
	sh, err := NewJSONShredder(g)
	if err != nil {
		b.Fatal(err)
	}
	rows, err := NewBuilder(g, sh)
	if err != nil {
		b.Fatal(err)
	}
	data := make([][]byte, len(convertLines))
	envs := make([]*Envelope, len(convertLines))
	size := 0
	for i, l := range convertLines {
		data[i] = []byte(l)
		size += len(l)
		if envelope {
			envs[i] = &Envelope{
				Topic: "clicks", Partition: 7, Offset: int64(1_000_000 + i), Timestamp: time.UnixMilli(1700000000000 + int64(i)),
				Key: []byte(fmt.Sprintf("user-%d", i)), Headers: []Header{{Key: "trace-id", Value: []byte("4bf92f3577b34da6")}},
			}
		}
	}
	b.SetBytes(int64(size / len(data)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if i%10000 == 0 {
			g.Reset() // a flushed row group
		}
		k := i % len(data)
		if err := rows.Append(data[k], envs[k]); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/row")
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}

// BenchmarkBuilderJSONEnvelope builds rows of the convert benchmark's
// records with the Kafka envelope (a key and one header per record).
func BenchmarkBuilderJSONEnvelope(b *testing.B) { benchmarkBuilder(b, true) }

// BenchmarkBuilderJSON is the same records through the Builder without an
// envelope; BenchmarkJSONShredConvert is them through Shred.
func BenchmarkBuilderJSON(b *testing.B) { benchmarkBuilder(b, false) }
