package test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pqsink/pqsink/internal/events"
	"github.com/pqsink/pqsink/internal/testutil"
	"github.com/pqsink/pqsink/internal/testutil/duckdb"
	kafkatest "github.com/pqsink/pqsink/internal/testutil/kafka"
	"github.com/pqsink/pqsink/objstore"
)

// kcatKey is how a line fed to `kcat -P -K '\t'` carries its key. kcat
// (1.7, librdkafka 2.0) splits a line at the first delimiter: "k\tv" is key
// k, "\tv" the empty key (length 0, not null), and a line without the
// delimiter is a value with a null key.
type kcatKey int

const (
	kcatKeyed kcatKey = iota
	kcatEmptyKey
	kcatNullKey
)

// kcatHeader is a header as given to `kcat -H`: "name=value", where
// "name=" is the empty value and a bare "name" (no '=') a null value.
type kcatHeader struct {
	name  string
	value *string // nil = null
}

func (h kcatHeader) arg() string {
	if h.value == nil {
		return h.name
	}
	return h.name + "=" + *h.value
}

func strp(s string) *string { return &s }

// kcatRecord is what one line fed to kcat should become in Kafka, and so
// in the archive: its key, its headers in order, its value.
type kcatRecord struct {
	key     []byte // nil = null
	headers []kcatHeader
	value   []byte
}

// kcatBatch is one kcat invocation: its headers apply to every record.
type kcatBatch struct {
	name      string
	key       kcatKey
	headers   []kcatHeader
	partition int // -p; -1 for librdkafka's partitioner
	n         int
}

// TestSinkKcat archives a topic written by kcat, a librdkafka client
// independent of the kafka-go code that the sink and the harness share,
// with keys (present, empty, null) and headers (several, empty and null
// values, non-ASCII), and checks that every landed row equals both what the
// broker holds and what was handed to kcat.
func TestSinkKcat(t *testing.T) {
	kcat, err := exec.LookPath("kcat")
	if err != nil {
		t.Fatalf("kcat is not installed (%v): %s", err, testutil.ProvisionHint)
	}
	db := duckdb.Start(t)
	const partitions, topic = 3, "kcat-events"
	broker := kafkatest.Start(t, partitions, topic)

	batches := []kcatBatch{
		{name: "keyed", key: kcatKeyed, partition: -1, n: 900,
			headers: []kcatHeader{{"source", strp("kcat")}, {"batch", strp("keyed")}}},
		{name: "empty-key", key: kcatEmptyKey, partition: -1, n: 600,
			headers: []kcatHeader{{"batch", strp("empty-key")}, {"empty", strp("")}, {"null", nil}, {"eq", strp("a=b=c")}}},
		{name: "null-key", key: kcatNullKey, partition: -1, n: 600},
		{name: "pinned", key: kcatKeyed, partition: 1, n: 400,
			headers: []kcatHeader{{"u", strp("héllo wörld ✓")}, {"batch", strp("pinned")}}},
	}
	gen := events.New(77, time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC))
	want := map[string]kcatRecord{} // by canonical payload
	n := 0
	for _, b := range batches {
		var in bytes.Buffer
		for i := range b.n {
			value := gen.Append(nil)
			if bytes.ContainsAny(value, "\t\n") {
				t.Fatalf("reference event holds a tab or newline, which kcat would split at: %s", value)
			}
			rec := kcatRecord{headers: b.headers, value: value}
			switch b.key {
			case kcatKeyed:
				rec.key = []byte(fmt.Sprintf("%s-ключ-%d", b.name, i%97))
				in.Write(rec.key)
				in.WriteByte('\t')
			case kcatEmptyKey:
				rec.key = []byte{}
				in.WriteByte('\t')
			}
			in.Write(value)
			in.WriteByte('\n')
			want[expectedPayload(t, value, "variant")] = rec
		}
		args := []string{"-P", "-b", broker.Brokers[0], "-t", topic, "-K", "\t"}
		if b.partition >= 0 {
			args = append(args, "-p", strconv.Itoa(b.partition))
		}
		for _, h := range b.headers {
			args = append(args, "-H", h.arg())
		}
		runKcat(t, kcat, args, &in)
		n += b.n
	}
	if len(want) != n {
		t.Fatalf("%d distinct payloads for %d records: the reference events should be unique", len(want), n)
	}

	// The broker holds what kcat was given, as kcat itself reads it back:
	// empty keys and header values stay empty, null ones null.
	back := kcatConsume(t, kcat, broker.Brokers[0], topic)
	if len(back) != n {
		t.Fatalf("kcat reads %d records back, it was given %d", len(back), n)
	}
	for _, r := range back {
		rec, ok := want[expectedPayload(t, r.value, "variant")]
		switch {
		case !ok:
			t.Fatalf("kcat reads back a value it was not given: %s", r.value)
		case !sameBytes(r.key, rec.key):
			t.Fatalf("kcat reads back key %s, it was given %s", kcatKeyText(r.key), kcatKeyText(rec.key))
		case kcatHeaderText(r.headers) != kcatHeaderText(rec.headers):
			t.Fatalf("kcat reads back headers %s, it was given %s", kcatHeaderText(r.headers), kcatHeaderText(rec.headers))
		}
	}

	truth := readTopic(t, broker.Brokers, topic, partitions)
	if len(truth) != n {
		t.Fatalf("Kafka holds %d records, kcat was given %d", len(truth), n)
	}
	// The harness's reader (readTopic) must see what kcat was given, or
	// the comparison with its truth below proves little.
	for id, p := range truth {
		rec, ok := want[expectedPayload(t, p.Value, "variant")]
		if !ok {
			t.Fatalf("Kafka holds %s with a value kcat was not given: %s", id, p.Value)
		}
		if !sameBytes(p.Key, rec.key) {
			t.Errorf("readTopic reads Kafka record %s's key as %s, kcat was given %s", id, kcatKeyText(p.Key), kcatKeyText(rec.key))
		}
		if got, exp := p.Headers, kcatHeaderMap(rec.headers); !maps.Equal(got, exp) {
			t.Errorf("readTopic reads Kafka record %s's headers as %v, kcat was given %v", id, got, exp)
		}
	}
	if t.Failed() {
		t.FailNow()
	}

	dir := t.TempDir()
	cfg := sinkConfig{brokers: broker.Brokers, group: "g-kcat", topic: topic, storeURL: "file://" + dir,
		format: "variant", shred: "auto", envelope: true, records: 700, interval: "2s"}
	store, err := objstore.Open(context.Background(), cfg.storeURL)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	sink, stop := startSink(t, cfg.yaml(t))
	waitLanded(t, store, int64(n), time.Minute)
	stop()
	if st := sink.Stats().Snapshot(); st.RecordsUploaded != int64(n) || st.Rejected != 0 {
		t.Errorf("stats: %+v", st)
	}

	files := download(t, store, t.TempDir())
	checkFileRanges(t, files)
	rows := readWithDuckDB(t, db, files, "variant", true)
	checkExactlyOnce(t, topic, truth, rows, "variant", true)

	// readWithDuckDB keeps neither the order of headers nor a null value
	// apart from an empty one: read them again, as they are, and compare
	// with what kcat was given.
	seen := 0
	bad := 0
	report := func(format string, args ...any) {
		if bad < 10 {
			t.Errorf(format, args...)
		}
		bad++
	}
	for _, f := range files {
		res := db.Query(t, fmt.Sprintf("SELECT payload, _kafka.partition AS part, _kafka.offset::VARCHAR AS off, _kafka.key AS key, _kafka.headers AS headers FROM read_parquet(%s)", duckdb.Quote(f.local)))
		for i := range res.Rows {
			seen++
			raw, err := json.Marshal(res.Value(i, "payload"))
			if err != nil {
				t.Fatal(err)
			}
			id := fmt.Sprintf("%v/%v", res.Value(i, "part"), res.Value(i, "off"))
			rec, ok := want[canonJSONText(t, raw)]
			if !ok {
				report("%s: landed payload that kcat was not given: %s", id, raw)
				continue
			}
			var key []byte
			if k := res.Value(i, "key"); k != nil {
				if key, err = duckdb.Blob(k); err != nil {
					t.Fatal(err)
				}
			}
			if !sameBytes(key, rec.key) {
				report("%s: landed key %s, kcat was given %s", id, kcatKeyText(key), kcatKeyText(rec.key))
			}
			if got := landedHeaders(t, res.Value(i, "headers")); kcatHeaderText(got) != kcatHeaderText(rec.headers) {
				report("%s: landed headers %s, kcat was given %s", id, kcatHeaderText(got), kcatHeaderText(rec.headers))
			}
		}
	}
	if seen != n {
		t.Errorf("DuckDB read %d rows, kcat was given %d records", seen, n)
	}
}

// kcatKeyText names a key for messages.
func kcatKeyText(k []byte) string {
	switch {
	case k == nil:
		return "null"
	case len(k) == 0:
		return "the empty key"
	}
	return strconv.Quote(string(k))
}

// sameBytes compares keys or values, null (nil) apart from empty.
func sameBytes(a, b []byte) bool {
	return (a == nil) == (b == nil) && bytes.Equal(a, b)
}

// runKcat runs kcat with args, feeding it stdin, and fails the test with
// its output if it fails.
func runKcat(t *testing.T, kcat string, args []string, stdin *bytes.Buffer) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, kcat, args...)
	cmd.Stdin = stdin
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("kcat %s: %v\n%s", strings.Join(args, " "), err, out.Bytes())
	}
}

// kcatConsume reads every record of topic with `kcat -C -J`.
func kcatConsume(t *testing.T, kcat, broker, topic string) []kcatRecord {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	args := []string{"-C", "-b", broker, "-t", topic, "-o", "beginning", "-e", "-q", "-J"}
	cmd := exec.CommandContext(ctx, kcat, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("kcat %s: %v\n%s", strings.Join(args, " "), err, stderr.Bytes())
	}
	var recs []kcatRecord
	for line := range bytes.Lines(out) {
		var m struct {
			Key     *string   `json:"key"`
			Headers []*string `json:"headers"` // name, value, name, value...
			Payload *string   `json:"payload"`
		}
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatalf("kcat -J printed %q: %v", line, err)
		}
		if m.Payload == nil || len(m.Headers)%2 != 0 {
			t.Fatalf("kcat -J printed %q: no payload, or an odd headers list", line)
		}
		r := kcatRecord{value: []byte(*m.Payload)}
		if m.Key != nil {
			r.key = []byte(*m.Key)
		}
		for i := 0; i < len(m.Headers); i += 2 {
			r.headers = append(r.headers, kcatHeader{name: *m.Headers[i], value: m.Headers[i+1]})
		}
		recs = append(recs, r)
	}
	return recs
}

// kcatHeaderMap is headers as readTopic records them: values in base64,
// a null value as "".
func kcatHeaderMap(hs []kcatHeader) map[string]string {
	m := map[string]string{}
	for _, h := range hs {
		v := ""
		if h.value != nil {
			v = base64.StdEncoding.EncodeToString([]byte(*h.value))
		}
		m[h.name] = v
	}
	return m
}

// kcatHeaderText renders headers in order, a null value as null.
func kcatHeaderText(hs []kcatHeader) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, h := range hs {
		if i > 0 {
			b.WriteByte(' ')
		}
		if h.value != nil {
			fmt.Fprintf(&b, "%q:%q", h.name, *h.value)
		} else {
			fmt.Fprintf(&b, "%q:null", h.name)
		}
	}
	b.WriteByte(']')
	return b.String()
}

// landedHeaders reads the _kafka.headers map DuckDB returned, in file
// order.
func landedHeaders(t *testing.T, v any) []kcatHeader {
	t.Helper()
	var hs []kcatHeader
	entries, _ := v.([]any)
	for _, e := range entries {
		kv := e.(map[string]any)
		h := kcatHeader{name: kv["key"].(string)}
		if kv["value"] != nil {
			b, err := duckdb.Blob(kv["value"])
			if err != nil {
				t.Fatal(err)
			}
			h.value = strp(string(b))
		}
		hs = append(hs, h)
	}
	return hs
}
