package test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/segmentio/kafka-go"

	"github.com/pqsink/pqsink/config"
	"github.com/pqsink/pqsink/connector/source"
	"github.com/pqsink/pqsink/internal/testutil/duckdb"
	kafkatest "github.com/pqsink/pqsink/internal/testutil/kafka"
	"github.com/pqsink/pqsink/objstore"
	"github.com/pqsink/pqsink/test/crossread"
)

// exactRecord is a Kafka record as the broker holds it, with null apart
// from empty for the key and every header value, and headers in order.
type exactRecord struct {
	Partition int
	Offset    int64
	TimeMs    int64
	Key       []byte
	Value     []byte
	Headers   []kafka.Header
}

// readExact reads every record of topic, keeping null and empty apart.
func readExact(t *testing.T, brokers []string, topic string, partitions int) []exactRecord {
	t.Helper()
	return readExactVia(t, nil, brokers, topic, partitions)
}

// readExactVia is readExact through a transport (SASL, TLS), or a new
// one when nil. It reads with Client.Fetch, not a
// Reader: the Reader reads an empty key or header value as null.
func readExactVia(t *testing.T, transport kafka.RoundTripper, brokers []string, topic string, partitions int) []exactRecord {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if transport == nil {
		// Not the shared DefaultTransport (see produceEventsVia).
		tr := &kafka.Transport{}
		defer tr.CloseIdleConnections()
		transport = tr
	}
	client := &kafka.Client{Addr: kafka.TCP(brokers...), Transport: transport}
	var out []exactRecord
	for p := range partitions {
		resp, err := client.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{topic: {kafka.LastOffsetOf(p)}}})
		if err != nil {
			t.Fatal(err)
		}
		end := resp.Topics[topic][0].LastOffset
		if end == 0 {
			continue
		}
		for next := int64(0); next < end; {
			resp, err := client.Fetch(ctx, &kafka.FetchRequest{Topic: topic, Partition: p, Offset: next, MaxBytes: 32 << 20, MaxWait: 100 * time.Millisecond})
			if err == nil {
				err = resp.Error
			}
			if err != nil {
				t.Fatalf("reading %s[%d] at %d: %v", topic, p, next, err)
			}
			for {
				m, err := resp.Records.ReadRecord()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				if m.Offset < next {
					continue
				}
				r := exactRecord{Partition: p, Offset: m.Offset, TimeMs: m.Time.UnixMilli(), Key: readAllBytes(t, m.Key), Value: readAllBytes(t, m.Value)}
				for _, h := range m.Headers {
					r.Headers = append(r.Headers, kafka.Header{Key: h.Key, Value: bytes.Clone(h.Value)})
				}
				out = append(out, r)
				next = m.Offset + 1
			}
		}
	}
	return out
}

// exactBytes compares two byte strings, null apart from empty.
func exactBytes(a, b []byte) bool { return (a == nil) == (b == nil) && bytes.Equal(a, b) }

func sameHeaders(a, b []kafka.Header) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Key != b[i].Key || !exactBytes(a[i].Value, b[i].Value) {
			return false
		}
	}
	return true
}

// fidelityGen makes random records: keys of random bytes (null, empty,
// invalid UTF-8), headers with random keys and values (null, empty,
// binary; now and then a key that is not UTF-8), values of random JSON of
// 0 to max bytes, now and then one that is not JSON or is too large.
type fidelityGen struct {
	rng *rand.Rand
	max int
}

func (g *fidelityGen) bytes(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(g.rng.Uint32())
	}
	return b
}

func (g *fidelityGen) maybeNull() []byte {
	switch g.rng.IntN(4) {
	case 0:
		return nil
	case 1:
		return []byte{}
	}
	return g.bytes(1 + g.rng.IntN(40))
}

// text is a random valid UTF-8 string: ASCII, escapes, accents, CJK, emoji.
func (g *fidelityGen) text(n int) string {
	runes := []rune{'a', 'Z', '0', ' ', '"', '\\', '\n', '\t', 0x01, 'é', 'ß', '日', '本', '😀', '/', '<', '&', 0x7f}
	var sb strings.Builder
	for range n {
		sb.WriteRune(runes[g.rng.IntN(len(runes))])
	}
	return sb.String()
}

// json returns a JSON value of about size bytes: integers, strings,
// booleans, nulls, arrays and objects (keys sorted, as a Variant keeps
// them, so that the value survives byte for byte where it can).
func (g *fidelityGen) json(size, depth int) any {
	if depth > 3 || size < 16 {
		switch g.rng.IntN(5) {
		case 0:
			return g.rng.Int64N(1<<53) - 1<<52
		case 1:
			return g.text(max(0, size/2))
		case 2:
			return g.rng.IntN(2) == 0
		case 3:
			return nil
		}
		return g.text(g.rng.IntN(8))
	}
	if g.rng.IntN(3) == 0 {
		n := 1 + g.rng.IntN(4)
		arr := make([]any, n)
		for i := range arr {
			arr[i] = g.json(size/n, depth+1)
		}
		return arr
	}
	n := 1 + g.rng.IntN(5)
	obj := map[string]any{}
	for i := range n {
		obj["f"+strconv.Itoa(i)+g.text(g.rng.IntN(3))] = g.json(size/n, depth+1)
	}
	return obj
}

// poison says why a record is meant to be rejected, or "".
func (g *fidelityGen) message(i int, base time.Time) (kafka.Message, string) {
	m := kafka.Message{Key: g.maybeNull(), Time: base.Add(time.Duration(i) * time.Millisecond)}
	for j := range g.rng.IntN(4) {
		key := strconv.Itoa(j) + g.text(g.rng.IntN(6))
		if j == 0 && g.rng.IntN(5) == 0 {
			key = ""
		}
		m.Headers = append(m.Headers, kafka.Header{Key: key, Value: g.maybeNull()})
	}
	size := g.rng.IntN(200)
	if g.rng.IntN(40) == 0 {
		size = g.rng.IntN(g.max)
	}
	v, err := json.Marshal(g.json(size, 0))
	if err != nil {
		panic(err)
	}
	m.Value = v
	reason := ""
	switch g.rng.IntN(40) {
	case 0:
		m.Headers = append(m.Headers, kafka.Header{Key: "bad\xff" + string(g.bytes(2)), Value: g.maybeNull()})
		reason = "envelope"
	case 1:
		m.Value = append([]byte("{not json "), g.bytes(g.rng.IntN(20))...)
		reason = "decode"
	case 2:
		m.Value = append(append([]byte(`"`), bytes.Repeat([]byte{'x'}, g.max)...), '"')
		reason = "too_large"
	}
	if reason == "" && !utf8.Valid(m.Value) {
		panic("generated JSON is not UTF-8")
	}
	return m, reason
}

// TestFidelityProperty sends random records through `pqsink run` (in
// this process, stopped and started again between batches, which
// restarts every partition's fetch from its committed offset) and
// `pqsink replay`, and checks that every record comes back byte for
// byte: keys, header keys and values (null apart from empty, order kept),
// timestamps, and values as JSON values; the rejected ones reach the dead
// letters byte for byte. DuckDB and arrow-go read every file it leaves.
func TestFidelityProperty(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("PQSINK_FIDELITY_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("seed %d (PQSINK_FIDELITY_SEED to repeat)", seed)
	const partitions, batches, perBatch, maxRecord = 3, 3, 400, 64 << 10
	topic, target, dlq := "fidelity", "fidelity.replayed", "fidelity.dlq"
	broker := kafkatest.Start(t, partitions, topic, target, dlq)
	g := &fidelityGen{rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), max: maxRecord}
	w := &kafka.Writer{Transport: testTransport(t), Addr: kafka.TCP(broker.Brokers...), Topic: topic, Balancer: &kafka.RoundRobin{}, RequiredAcks: kafka.RequireAll,
		BatchTimeout: time.Millisecond, BatchBytes: 4 << 20}
	defer w.Close()
	ctx := context.Background()
	dir := t.TempDir()
	cfg := sinkConfig{brokers: broker.Brokers, group: "fidelity", topic: topic, storeURL: "file://" + dir, format: "variant", shred: "auto",
		envelope: true, records: 150, interval: "1s",
		extra: fmt.Sprintf("max_record_bytes: %d\ndead_letter:\n  topic: %s\n", maxRecord, dlq)}
	text := cfg.yaml(t)
	store, err := objstore.Open(ctx, "file://"+dir)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()

	poisoned := map[int]string{} // by the order produced
	base := time.Date(2026, 11, 27, 8, 0, 0, 0, time.UTC)
	good := 0
	for b := range batches {
		msgs := make([]kafka.Message, 0, perBatch)
		for i := range perBatch {
			m, reason := g.message(b*perBatch+i, base)
			if reason != "" {
				poisoned[b*perBatch+i] = reason
			} else {
				good++
			}
			msgs = append(msgs, m)
		}
		for len(msgs) > 0 {
			n := min(len(msgs), 50)
			if err := w.WriteMessages(ctx, msgs[:n]...); err != nil {
				t.Fatal(err)
			}
			msgs = msgs[n:]
		}
		// A sink for each batch: every start reads each partition's first
		// fetch from its committed offset.
		_, stop := startSink(t, text)
		waitLanded(t, store, int64(good), 2*time.Minute)
		stop()
	}
	t.Logf("%d records, %d rejected by design", batches*perBatch, len(poisoned))

	truth := readExact(t, broker.Brokers, topic, partitions)
	if len(truth) != batches*perBatch {
		t.Fatalf("the topic holds %d records, want %d", len(truth), batches*perBatch)
	}
	// The records meant to be rejected, by their bytes (the round robin
	// decides where each went).
	rejected := map[string]exactRecord{}
	var kept []exactRecord
	for _, r := range truth {
		var v any
		bad := json.Unmarshal(r.Value, &v) != nil || len(r.Value) > maxRecord
		for _, h := range r.Headers {
			bad = bad || !utf8.ValidString(h.Key)
		}
		if bad {
			rejected[fmt.Sprintf("%d/%d", r.Partition, r.Offset)] = r
		} else {
			kept = append(kept, r)
		}
	}
	if len(rejected) != len(poisoned) {
		t.Fatalf("%d records look rejected, %d were made so", len(rejected), len(poisoned))
	}

	// The dead letters: each rejected record, byte for byte, once.
	letters := readExact(t, broker.Brokers, dlq, partitions)
	if len(letters) != len(rejected) {
		t.Errorf("%d dead letters, want %d", len(letters), len(rejected))
	}
	for _, l := range letters {
		var own []kafka.Header
		fields := map[string]string{}
		for _, h := range l.Headers {
			if strings.HasPrefix(h.Key, "pqsink.") {
				fields[h.Key] = string(h.Value)
			} else {
				own = append(own, h)
			}
		}
		id := fields["pqsink.partition"] + "/" + fields["pqsink.offset"]
		r, ok := rejected[id]
		if !ok {
			t.Errorf("dead letter of %s, which was not rejected (reason %s)", id, fields["pqsink.reason"])
			continue
		}
		delete(rejected, id)
		if !exactBytes(l.Key, r.Key) || !exactBytes(l.Value, r.Value) || !sameHeaders(own, r.Headers) || l.TimeMs != r.TimeMs {
			t.Errorf("dead letter of %s differs: key %q value %.40q headers %q; want %q %.40q %q", id, l.Key, l.Value, own, r.Key, r.Value, r.Headers)
		}
	}
	for id := range rejected {
		t.Errorf("rejected record %s has no dead letter", id)
	}

	// Every file, by DuckDB (with the envelope: keys, headers, times) and
	// by arrow-go.
	files := download(t, store, t.TempDir())
	truthMap := map[string]produced{}
	for _, r := range kept {
		p := produced{Partition: r.Partition, Offset: r.Offset, TimeMs: r.TimeMs, Key: r.Key, Value: r.Value, Headers: map[string]string{}}
		for _, h := range r.Headers {
			p.Headers[h.Key] = base64.StdEncoding.EncodeToString(h.Value)
		}
		truthMap[p.id()] = p
	}
	checkExactlyOnce(t, topic, truthMap, readWithDuckDB(t, duckdb.Start(t), files, "variant", true), "variant", true)
	for _, f := range files {
		arrow, err := crossread.Arrow(f.local)
		if err != nil {
			t.Errorf("arrow-go cannot read %s: %v", f.key, err)
			continue
		}
		own, err := crossread.PQSink(f.local)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(arrow, own) {
			t.Errorf("%s: arrow-go reads other values than pqsink's reader", f.key)
		}
	}

	// Replay, and every kept record back byte for byte.
	rcfg, err := config.ParseReplay([]byte(text), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	opts := source.Options{From: "file://" + dir, Topic: target, Checkpoint: filepath.Join(t.TempDir(), "ck"), PathTemplate: rcfg.Path,
		Log: slog.New(slog.NewTextHandler(logTail(t, "replay"), nil))}
	r, err := source.New(ctx, rcfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Run(ctx); err != nil {
		t.Fatal(err)
	}
	r.Close()
	replayed := readExact(t, broker.Brokers, target, partitions)
	sortRecords := func(rs []exactRecord) {
		sort.Slice(rs, func(i, j int) bool {
			if rs[i].Partition != rs[j].Partition {
				return rs[i].Partition < rs[j].Partition
			}
			return rs[i].Offset < rs[j].Offset
		})
	}
	sortRecords(kept)
	sortRecords(replayed)
	if len(replayed) != len(kept) {
		t.Fatalf("replayed %d records, want %d", len(replayed), len(kept))
	}
	bad := 0
	for i, want := range kept {
		got := replayed[i]
		if got.Partition != want.Partition || !exactBytes(got.Key, want.Key) || !sameHeaders(got.Headers, want.Headers) || got.TimeMs != want.TimeMs || !jsonSameValue(got.Value, want.Value) {
			if bad++; bad <= 5 {
				t.Errorf("replayed record %d (source %d/%d) differs:\n got key %q headers %q time %d value %.80s\nwant key %q headers %q time %d value %.80s",
					i, want.Partition, want.Offset, got.Key, got.Headers, got.TimeMs, got.Value, want.Key, want.Headers, want.TimeMs, want.Value)
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d replayed records differ", bad, len(kept))
	}
}

// jsonSameValue compares JSON texts as values, numbers exactly.
func jsonSameValue(a, b []byte) bool {
	da, db := json.NewDecoder(bytes.NewReader(a)), json.NewDecoder(bytes.NewReader(b))
	da.UseNumber()
	db.UseNumber()
	var va, vb any
	if da.Decode(&va) != nil || db.Decode(&vb) != nil {
		return false
	}
	x, _ := json.Marshal(va)
	y, _ := json.Marshal(vb)
	return bytes.Equal(x, y)
}
