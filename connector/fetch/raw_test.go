package fetch

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/protocol"
	fetchapi "github.com/segmentio/kafka-go/protocol/fetch"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kversion"

	kafkatest "github.com/pqsink/pqsink/internal/testutil/kafka"
)

// The raw decoder's tests decode record sets that kafka-go encodes, with
// the raw decoder and with kafka-go's own (readRecords), and require the
// same records, offsets and bytes held.

// testBatch is one record batch of a test record set.
type testBatch struct {
	base    int64
	attrs   protocol.Attributes
	records []kafka.Record
}

// encodeBatches writes batches as kafka-go writes a record set (magic 2),
// one after the other, with each batch's base offset set.
func encodeBatches(t testing.TB, batches []testBatch) []byte {
	t.Helper()
	var set []byte
	for _, b := range batches {
		rs := protocol.RecordSet{Version: 2, Attributes: b.attrs, Records: protocol.NewRecordReader(b.records...)}
		var buf bytes.Buffer
		if _, err := rs.WriteTo(&buf); err != nil {
			t.Fatalf("encoding a batch: %v", err)
		}
		enc := buf.Bytes()[4:] // the record set's size
		binary.BigEndian.PutUint64(enc, uint64(b.base))
		set = append(set, enc...)
	}
	return set
}

// testRecords makes n records of a batch: keys, values and headers null,
// empty or not by turns, times a millisecond apart.
func testRecords(n int, seed uint64) []kafka.Record {
	r := rand.New(rand.NewPCG(seed, 7))
	t0 := time.UnixMilli(1_700_000_000_123 + int64(seed))
	pick := func(i int) []byte {
		switch (i + r.IntN(3)) % 3 {
		case 0:
			return nil
		case 1:
			return []byte{}
		}
		return fmt.Appendf(nil, `{"n":%d,"pad":"%s"}`, i, bytes.Repeat([]byte{'a' + byte(i%26)}, r.IntN(300)))
	}
	recs := make([]kafka.Record, n)
	for i := range recs {
		recs[i] = kafka.Record{Offset: int64(i), Time: t0.Add(time.Duration(i) * time.Millisecond), Key: kafka.NewBytes(pick(i)), Value: kafka.NewBytes(pick(i + 1))}
		if i%4 != 0 {
			for h := 0; h < i%3+1; h++ {
				recs[i].Headers = append(recs[i].Headers, kafka.Header{Key: fmt.Sprintf("h%d", h), Value: pick(i + h)})
			}
		}
	}
	return recs
}

// decodeBoth decodes set from offset from with kafka-go's decoder and the
// raw one.
func decodeBoth(t *testing.T, set []byte, from int64) (want, got []Record, wantNext, gotNext, wantSize, gotSize int64, wantErr, gotErr error) {
	t.Helper()
	framed := binary.BigEndian.AppendUint32(nil, uint32(len(set)))
	framed = append(framed, set...)
	var rs protocol.RecordSet
	wantNext = from
	var arena []byte
	if _, wantErr = rs.ReadFrom(bytes.NewReader(framed)); wantErr == nil && rs.Records != nil {
		want, wantSize, wantErr = readRecords(rs.Records, &wantNext, &arena, nil)
	}
	gotNext = from
	var arena2 []byte
	var d rawDecoder
	got, gotSize, gotErr = d.readRawRecords(set, &gotNext, &arena2, nil)
	return
}

// TestRawRecordsMatchKafkaGo checks that the raw decoder reads what
// kafka-go reads, for every codec, with control batches, batches before
// the requested offset and a last batch cut short.
func TestRawRecordsMatchKafkaGo(t *testing.T) {
	codecs := []protocol.Attributes{0, protocol.Gzip, protocol.Snappy, protocol.Lz4, protocol.Zstd}
	for _, codec := range codecs {
		batches := []testBatch{
			{base: 100, attrs: codec, records: testRecords(50, 1)},
			{base: 150, attrs: codec | protocol.Control, records: testRecords(1, 2)},
			{base: 151, attrs: codec, records: testRecords(1, 3)},
			{base: 152, attrs: codec | protocol.Transactional, records: testRecords(200, 4)},
		}
		set := encodeBatches(t, batches)
		cases := []struct {
			name string
			set  []byte
			from int64
		}{
			{"whole", set, 100},
			{"from inside the first batch", set, 120},
			{"from the last batch", set, 160},
			{"past the end", set, 1000},
			{"last batch cut short", set[:len(set)-17], 100},
			{"one byte of the last batch", set[:len(set)-len(encodeBatches(t, batches[3:]))+1], 100},
			{"empty", nil, 0},
		}
		for _, c := range cases {
			t.Run(fmt.Sprintf("%s/%s", codec.Compression(), c.name), func(t *testing.T) {
				want, got, wantNext, gotNext, wantSize, gotSize, wantErr, gotErr := decodeBoth(t, c.set, c.from)
				if (wantErr == nil) != (gotErr == nil) {
					t.Fatalf("error %v, kafka-go's %v", gotErr, wantErr)
				}
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("read %d records, kafka-go %d; first difference %s", len(got), len(want), firstDiff(got, want))
				}
				if gotNext != wantNext || gotSize != wantSize {
					t.Errorf("next %d, size %d; kafka-go's next %d, size %d", gotNext, gotSize, wantNext, wantSize)
				}
				if c.name == "whole" && len(got) != 251 {
					t.Errorf("read %d records, want 251 (the control batch skipped)", len(got))
				}
			})
		}
	}
}

// TestRawRecordsLegacyMessageSets checks that message sets of magic 1
// (brokers before Kafka 0.11), alone or after a record batch, are read
// as kafka-go reads them.
func TestRawRecordsLegacyMessageSets(t *testing.T) {
	v1 := func(n int, seed uint64) []byte {
		recs := testRecords(n, seed)
		for i := range recs {
			recs[i].Headers = nil // magic 1 has none
		}
		rs := protocol.RecordSet{Version: 1, Records: protocol.NewRecordReader(recs...)}
		var buf bytes.Buffer
		if _, err := rs.WriteTo(&buf); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()[4:]
	}
	v2 := encodeBatches(t, []testBatch{{base: 0, records: testRecords(5, 13)}})
	for _, c := range []struct {
		name string
		set  []byte
		want int
	}{
		{"magic 1", v1(7, 14), 7},
		{"batch then magic 1", append(bytes.Clone(v2), v1(3, 15)...), 5},
	} {
		t.Run(c.name, func(t *testing.T) {
			want, got, wantNext, gotNext, wantSize, gotSize, wantErr, gotErr := decodeBoth(t, c.set, 0)
			if wantErr != nil || gotErr != nil {
				t.Fatalf("error %v, kafka-go's %v", gotErr, wantErr)
			}
			if len(got) < c.want || !reflect.DeepEqual(got, want) {
				t.Fatalf("read %d records, kafka-go %d (want at least %d); first difference %s", len(got), len(want), c.want, firstDiff(got, want))
			}
			if gotNext != wantNext || gotSize != wantSize {
				t.Errorf("next %d, size %d; kafka-go's next %d, size %d", gotNext, gotSize, wantNext, wantSize)
			}
		})
	}
}

func firstDiff(a, b []Record) string {
	for i := range min(len(a), len(b)) {
		if !reflect.DeepEqual(a[i], b[i]) {
			return fmt.Sprintf("at %d: %+v, kafka-go %+v", i, a[i], b[i])
		}
	}
	return "in length"
}

// TestRawRecordsBadInput checks that a damaged record set is an error or
// fewer records, never a crash: every prefix, and bytes changed at
// random (a changed byte fails the batch's CRC, or is in its header).
func TestRawRecordsBadInput(t *testing.T) {
	for _, codec := range []protocol.Attributes{0, protocol.Lz4} {
		set := encodeBatches(t, []testBatch{{base: 0, attrs: codec, records: testRecords(20, 5)}, {base: 20, attrs: codec, records: testRecords(5, 6)}})
		var d rawDecoder
		for n := range len(set) {
			next := int64(0)
			var arena []byte
			got, _, err := d.readRawRecords(set[:n], &next, &arena, nil)
			if err == nil && len(got) > 20 {
				t.Fatalf("prefix %d of %d: %d records, more than the whole first batch", n, len(set), len(got))
			}
		}
		r := rand.New(rand.NewPCG(1, 2))
		for range 2000 {
			bad := bytes.Clone(set)
			bad[r.IntN(len(bad))] ^= byte(1 + r.IntN(255))
			next := int64(0)
			var arena []byte
			d.readRawRecords(bad, &next, &arena, nil)
		}
	}
	// A record whose fields run past its batch, with a valid CRC: the
	// batch is an error, not a crash.
	set := encodeBatches(t, []testBatch{{records: testRecords(3, 8)}})
	binary.BigEndian.PutUint32(set[57:], 1000) // the record count
	binary.BigEndian.PutUint32(set[batchCRCOffset:], crc32.Checksum(set[batchAttrOffset:], castagnoli))
	var d rawDecoder
	next := int64(0)
	var arena []byte
	got, _, err := d.readRawRecords(set, &next, &arena, nil)
	if err != nil || len(got) != 3 {
		t.Errorf("a batch counting more records than it holds: %d records, error %v; want its 3", len(got), err)
	}
}

// TestParseRawResponse checks the response header decoding of every
// version the raw decoder reads, on responses that kafka-go encodes.
func TestParseRawResponse(t *testing.T) {
	set := encodeBatches(t, []testBatch{{base: 5, records: testRecords(3, 9)}})
	resp := &fetchapi.Response{ThrottleTimeMs: 3, ErrorCode: 0, SessionID: 0, Topics: []fetchapi.ResponseTopic{
		{Topic: "a", Partitions: []fetchapi.ResponsePartition{
			{Partition: 0, HighWatermark: 42, LastStableOffset: 42, LogStartOffset: 4,
				AbortedTransactions: []fetchapi.ResponseTransaction{{ProducerID: 1, FirstOffset: 2}},
				RecordSet:           protocol.RecordSet{Version: 2, Records: protocol.NewRecordReader(testRecords(3, 9)...)}},
			{Partition: 3, ErrorCode: 1, HighWatermark: -1, LogStartOffset: 7},
		}},
		{Topic: "bb", Partitions: []fetchapi.ResponsePartition{{Partition: 1, HighWatermark: 9}}},
	}}
	for v := int16(minRawFetchVersion); v <= 11; v++ {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			resp.Topics[0].Partitions[0].RecordSet.Records = protocol.NewRecordReader(testRecords(3, 9)...)
			// kafka-go writes no empty record set: the others have one each.
			resp.Topics[0].Partitions[1].RecordSet = protocol.RecordSet{Version: 2, Records: protocol.NewRecordReader(testRecords(1, 10)...)}
			resp.Topics[1].Partitions[0].RecordSet = protocol.RecordSet{Version: 2, Records: protocol.NewRecordReader(testRecords(2, 11)...)}
			var buf bytes.Buffer
			if err := protocol.WriteResponse(&buf, v, 1, resp); err != nil {
				t.Fatal(err)
			}
			code, parts, err := parseRawResponse(&rawResponse{version: v, body: buf.Bytes()[8:]}, nil)
			if err != nil || code != 0 {
				t.Fatalf("code %d, error %v", code, err)
			}
			logStart := func(n int64) int64 {
				if v < 5 {
					return 0
				}
				return n
			}
			if len(parts) != 3 {
				t.Fatalf("%d partitions, want 3", len(parts))
			}
			p := parts[0]
			if p.topic != "a" || p.id != 0 || p.errorCode != 0 || p.highWatermark != 42 || p.logStart != logStart(4) || len(p.records) != len(set) {
				t.Errorf("first partition %+v (%d bytes of records, want %d)", p, len(p.records), len(set))
			}
			if p := parts[1]; p.topic != "a" || p.id != 3 || p.errorCode != 1 || p.logStart != logStart(7) {
				t.Errorf("second partition %+v", p)
			}
			if p := parts[2]; p.topic != "bb" || p.id != 1 || p.highWatermark != 9 || len(p.records) == 0 {
				t.Errorf("third partition %+v", p)
			}
			var d rawDecoder
			next := int64(0)
			var arena []byte
			got, _, err := d.readRawRecords(p.records, &next, &arena, nil)
			if err != nil || len(got) != 3 || next != 3 {
				t.Errorf("the first partition's records: %d up to %d, error %v; want 3", len(got), next, err)
			}
			if _, _, err := parseRawResponse(&rawResponse{version: v, body: buf.Bytes()[8 : buf.Len()-5]}, nil); err == nil {
				t.Errorf("a response cut short parsed without error")
			}
		})
	}
}

// TestRawFetchBeforeVersion4 checks that a fetch before version 4 is
// written and decoded by kafka-go, as before the raw decoder, and that
// the multiplexer reads its records.
func TestRawFetchBeforeVersion4(t *testing.T) {
	resp := &fetchapi.Response{ThrottleTimeMs: 1, Topics: []fetchapi.ResponseTopic{{Topic: "t", Partitions: []fetchapi.ResponsePartition{
		{Partition: 0, HighWatermark: 10, RecordSet: protocol.RecordSet{Version: 1, Records: protocol.NewRecordReader(testRecords(4, 12)...)}},
	}}}}
	var in bytes.Buffer
	if err := protocol.WriteResponse(&in, 3, 7, resp); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	raw := &rawFetch{Request: &fetchapi.Request{ReplicaID: -1, Topics: []fetchapi.RequestTopic{{Topic: "t", Partitions: []fetchapi.RequestPartition{{Partition: 0}}}}}, clientID: "c", correlationID: 7}
	raw.Required(map[protocol.ApiKey]int16{protocol.Fetch: 3})
	msg, err := raw.RawExchange(struct {
		io.Reader
		io.Writer
	}{&in, &out})
	if err != nil {
		t.Fatal(err)
	}
	got, ok := msg.(*fetchapi.Response)
	if !ok {
		t.Fatalf("response %T, want kafka-go's", msg)
	}
	if out.Len() == 0 {
		t.Error("no request written")
	}
	next := int64(0)
	var arena []byte
	recs, _, err := readRecords(got.Topics[0].Partitions[0].RecordSet.Records, &next, &arena, nil)
	if err != nil || len(recs) != 4 || next != 4 {
		t.Errorf("%d records up to %d, error %v; want 4", len(recs), next, err)
	}
}

// TestFetchMuxReadsRaw checks that the multiplexer's fetches against a
// broker at fetch version 4 (the first the raw decoder reads) and at the
// newest are read raw, and deliver every record.
func TestFetchMuxReadsRaw(t *testing.T) {
	for _, max := range []int16{4, 11} {
		t.Run(fmt.Sprintf("fetch v%d", max), func(t *testing.T) {
			v := kversion.Stable()
			v.SetMaxKeyVersion(1, max) // fetch
			c := kafkatest.StartWith(t, []kfake.Opt{kfake.MaxVersions(v)}, 1, "raw")
			produce(t, c.Brokers, "raw", 0, 0, 300, 100)
			tr := &kafka.Transport{ClientID: "test", DialTimeout: 10 * time.Second}
			defer tr.CloseIdleConnections()
			raw := &rawFetch{Request: &fetchapi.Request{ReplicaID: -1, MaxBytes: 1 << 20, SessionID: -1, SessionEpoch: -1,
				Topics: []fetchapi.RequestTopic{{Topic: "raw", Partitions: []fetchapi.RequestPartition{{Partition: 0, CurrentLeaderEpoch: -1, LogStartOffset: -1, PartitionMaxBytes: 1 << 20}}}}}, clientID: "test", correlationID: 1}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			msg, err := tr.RoundTrip(ctx, kafka.TCP(c.Brokers...), raw)
			if err != nil {
				t.Fatal(err)
			}
			resp, ok := msg.(*rawResponse)
			if !ok || resp.version != max {
				t.Fatalf("response %T (%+v), want a raw one of version %d", msg, msg, max)
			}
			h := startMux(t, c.Brokers, defaultFetch, 64<<20)
			var lag atomic.Int64
			f := h.mux.Add("raw", 0, 0, &lag, nil)
			h.receive(t, f, 0, 300)
		})
	}
}

// BenchmarkDecodeRecords decodes a fetched record set of 200-byte JSON
// values (4 batches of 1,000 records) into a partition's records, with
// kafka-go's decoder and the raw one, uncompressed and lz4-compressed (as
// `pqsink bench` produces them), and uncompressed with two headers a
// record.
func BenchmarkDecodeRecords(b *testing.B) {
	value := func(i int) []byte {
		return fmt.Appendf(nil, `{"id":%d,"ts":"2025-01-01T00:00:00.%06dZ","user":"user_%d","country":"DE","amount":%d.25,"tags":["web"],"payload":{"session":"%016x","nested":{"level":%d,"flag":true,"score":0.5}}}`,
			i, i%1000000, i%10000, i%100000, uint64(i)*0x9e3779b97f4a7c15, i%10)
	}
	for _, c := range []struct {
		codec   protocol.Attributes
		headers bool
	}{{0, false}, {protocol.Lz4, false}, {0, true}} {
		var batches []testBatch
		for k := range 4 {
			recs := make([]kafka.Record, 1000)
			for i := range recs {
				recs[i] = kafka.Record{Offset: int64(i), Time: time.UnixMilli(1_700_000_000_000 + int64(i)), Value: kafka.NewBytes(value(k*1000 + i))}
				if c.headers {
					recs[i].Headers = []kafka.Header{{Key: "traceparent", Value: fmt.Appendf(nil, "00-%032x-%016x-01", i, i)}, {Key: "content-type", Value: []byte("application/json")}}
				}
			}
			batches = append(batches, testBatch{base: int64(k * 1000), attrs: c.codec, records: recs})
		}
		set := encodeBatches(b, batches)
		framed := binary.BigEndian.AppendUint32(nil, uint32(len(set)))
		framed = append(framed, set...)
		name := c.codec.Compression().String()
		if c.headers {
			name += "+headers"
		}
		b.Run("decoder=kafka-go/codec="+name, func(b *testing.B) {
			var batch []Record
			for b.Loop() {
				var rs protocol.RecordSet
				if _, err := rs.ReadFrom(bytes.NewReader(framed)); err != nil {
					b.Fatal(err)
				}
				next := int64(0)
				var arena []byte
				var err error
				if batch, _, err = readRecords(rs.Records, &next, &arena, batch[:0]); err != nil || len(batch) != 4000 {
					b.Fatalf("%d records, error %v", len(batch), err)
				}
			}
			b.SetBytes(int64(len(set)))
		})
		b.Run("decoder=raw/codec="+name, func(b *testing.B) {
			var d rawDecoder
			var batch []Record
			for b.Loop() {
				next := int64(0)
				var arena []byte
				var err error
				if batch, _, err = d.readRawRecords(set, &next, &arena, batch[:0]); err != nil || len(batch) != 4000 {
					b.Fatalf("%d records, error %v", len(batch), err)
				}
			}
			b.SetBytes(int64(len(set)))
		})
	}
}

// TestBufPoolKeepsFewSmallBuffers checks that the response buffers kept
// for later fetches are at most maxFreeBuffers, none over the limit.
func TestBufPoolKeepsFewSmallBuffers(t *testing.T) {
	cases := []struct {
		name string
		caps []int
		want []int // capacities kept, last first
	}{
		{"none", nil, nil},
		{"nil buffer", []int{0}, nil},
		{"small ones, up to the count", []int{10, 20, 30}, []int{20, 10}},
		{"a large one let go", []int{10, 2000, 30}, []int{30, 10}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var p bufPool
			for _, n := range c.caps {
				var b []byte
				if n > 0 {
					b = make([]byte, n)
				}
				p.put(b, 1000)
			}
			var got []int
			for b := p.get(); b != nil; b = p.get() {
				if len(b) != 0 {
					t.Errorf("a kept buffer has length %d, want 0", len(b))
				}
				got = append(got, cap(b))
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("kept %v, want %v", got, c.want)
			}
		})
	}
}
