package test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/pqsink/pqsink/config"
	"github.com/pqsink/pqsink/connector"
	"github.com/pqsink/pqsink/internal/events"
	"github.com/pqsink/pqsink/internal/testutil"
	"github.com/pqsink/pqsink/internal/testutil/duckdb"
	"github.com/pqsink/pqsink/objstore"
	pqreader "github.com/pqsink/pqsink/reader"
)

// produced is one record as Kafka stored it: the ground truth that the
// landed files are compared with.
type produced struct {
	Partition int
	Offset    int64
	TimeMs    int64
	Key       []byte
	Headers   map[string]string // values base64
	Value     []byte
}

func (p produced) id() string { return fmt.Sprintf("%d/%d", p.Partition, p.Offset) }

// produceEvents writes n reference events to topic, keyed so they spread
// over the partitions, every third one with headers and every fifth without
// a key.
func produceEvents(t *testing.T, brokers []string, topic string, first, n int) {
	t.Helper()
	produceEventsVia(t, nil, brokers, topic, first, n)
}

// produceEventsVia is produceEvents through a transport (SASL, TLS), or
// a new one when nil.
func produceEventsVia(t *testing.T, transport kafka.RoundTripper, brokers []string, topic string, first, n int) {
	t.Helper()
	if transport == nil {
		// Not kafka-go's shared DefaultTransport: it keeps each broker
		// address's metadata for a while, and a broker of this test may
		// listen on the port of an earlier test's, whose topics differ.
		tr := &kafka.Transport{}
		defer tr.CloseIdleConnections()
		transport = tr
	}
	w := &kafka.Writer{
		Addr: kafka.TCP(brokers...), Topic: topic, Balancer: &kafka.Hash{},
		BatchSize: 500, BatchTimeout: 2 * time.Millisecond, RequiredAcks: kafka.RequireAll,
		Transport: transport,
	}
	defer w.Close()
	gen := events.New(uint64(first)+1, time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC))
	base := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	msgs := make([]kafka.Message, 0, 500)
	flush := func() {
		if err := w.WriteMessages(context.Background(), msgs...); err != nil {
			t.Fatalf("producing: %v", err)
		}
		msgs = msgs[:0]
	}
	for i := first; i < first+n; i++ {
		m := kafka.Message{Value: gen.Append(nil), Time: base.Add(time.Duration(i) * 7 * time.Second)}
		m.Key = []byte("k" + strconv.Itoa(i))
		if i%5 == 0 {
			m.Key = nil
		}
		if i%3 == 0 {
			m.Headers = []kafka.Header{{Key: "trace", Value: []byte("t-" + strconv.Itoa(i))}, {Key: "bin", Value: []byte{0, 1, 2, byte(i)}}}
		}
		msgs = append(msgs, m)
		if len(msgs) == cap(msgs) {
			flush()
		}
	}
	if len(msgs) > 0 {
		flush()
	}
}

// readTopic reads every record of topic back from the broker.
func readTopic(t *testing.T, brokers []string, topic string, partitions int) map[string]produced {
	t.Helper()
	return readTopicVia(t, nil, brokers, topic, partitions)
}

// readTopicVia is readTopic through a transport and dialer (SASL, TLS),
// or kafka-go's defaults when nil.
func readTopicVia(t *testing.T, transport kafka.RoundTripper, brokers []string, topic string, partitions int) map[string]produced {
	t.Helper()
	out := map[string]produced{}
	for _, r := range readExactVia(t, transport, brokers, topic, partitions) {
		rec := produced{Partition: r.Partition, Offset: r.Offset, TimeMs: r.TimeMs, Key: r.Key, Value: r.Value, Headers: map[string]string{}}
		for _, h := range r.Headers {
			rec.Headers[h.Key] = base64.StdEncoding.EncodeToString(h.Value)
		}
		out[rec.id()] = rec
	}
	return out
}

// readAllBytes reads a record's key or value, nil staying nil.
func readAllBytes(t *testing.T, b kafka.Bytes) []byte {
	t.Helper()
	if b == nil {
		return nil
	}
	out := make([]byte, b.Len())
	if _, err := io.ReadFull(b, out); err != nil {
		t.Fatal(err)
	}
	return out
}

// sinkConfig renders a run configuration.
type sinkConfig struct {
	brokers   []string
	group     string
	topic     string
	storeURL  string
	s3        *s3Target
	storeKeys string // more lines of the store section (storeTarget.keys)
	format    string // json | variant
	shred     string
	envelope  bool
	path      string
	noPath    bool // no path key at all (a table derives it)
	records   int
	interval  string
	extra     string // more YAML, appended
	schemaDir string
}

type s3Target struct {
	endpoint, region, access, secret string
}

func (c sinkConfig) yaml(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "kafka:\n  brokers: [%s]\n  group: %s\n  topics: [%s]\n  start: earliest\n", strings.Join(c.brokers, ", "), c.group, c.topic)
	fmt.Fprintf(&b, "  session_timeout: 6s\n  heartbeat_interval: 500ms\n  rebalance_timeout: 10s\n  fetch: {max_wait: 100ms}\n")
	fmt.Fprintf(&b, "store:\n  url: %s\n", c.storeURL)
	if c.s3 != nil {
		fmt.Fprintf(&b, "  endpoint: %s\n  region: %s\n  path_style: true\n  access_key: %s\n  secret_key: %s\n", c.s3.endpoint, c.s3.region, c.s3.access, c.s3.secret)
	}
	b.WriteString(c.storeKeys)
	fmt.Fprintf(&b, "format:\n  type: %s\n", c.format)
	if c.format == "json" {
		dir := c.schemaDir
		if dir == "" {
			dir = t.TempDir()
		}
		path := filepath.Join(dir, "events.schema")
		if err := os.WriteFile(path, []byte(events.Schema), 0o644); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "  schema_file: %s\n", path)
	} else if c.shred != "" {
		fmt.Fprintf(&b, "  shred: %s\n", c.shred)
	}
	fmt.Fprintf(&b, "envelope: %v\n", c.envelope)
	path := c.path
	if path == "" {
		path = "{topic}/dt={record_time:2006-01-02}/hr={record_time:15}/{topic}+{partition}+{first_offset}.parquet"
	}
	if !c.noPath {
		fmt.Fprintf(&b, "path: %q\n", path)
	}
	interval := c.interval
	if interval == "" {
		interval = "1s"
	}
	fmt.Fprintf(&b, "rotate:\n  records: %d\n  bytes: 256MiB\n  interval: %s\n", max(c.records, 1), interval)
	fmt.Fprintf(&b, "parquet:\n  codec: zstd\n  row_group_bytes: 1MiB\nmemory:\n  limit: 512MiB\nshutdown_timeout: 20s\n")
	b.WriteString(c.extra)
	return b.String()
}

// startSink runs a sink in this process until the test ends or the
// returned stop is called; stop waits for a clean shutdown.
func startSink(t *testing.T, cfgText string) (*connector.Sink, func()) {
	t.Helper()
	cfg, err := config.Parse([]byte(cfgText), os.LookupEnv)
	if err != nil {
		t.Fatalf("config: %v\n%s", err, cfgText)
	}
	log := slog.New(slog.NewTextHandler(logTail(t, "sink"), &slog.HandlerOptions{Level: slog.LevelInfo}))
	ctx, cancel := context.WithCancel(context.Background())
	sink, err := connector.New(ctx, cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- sink.Run(ctx) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("sink.Run: %v", err)
				}
			case <-time.After(60 * time.Second):
				t.Errorf("sink did not stop within 60s")
			}
			sink.Close()
		})
	}
	t.Cleanup(stop)
	return sink, stop
}

// landedFile is one object of the sink, downloaded.
type landedFile struct {
	key   string
	local string
	rng   map[string]string // pqsink.kafka.* footer entries
	rows  int64
}

// download copies every Parquet object of store into dir.
func download(t *testing.T, store objstore.Store, dir string) []landedFile {
	t.Helper()
	ctx := context.Background()
	var files []landedFile
	for info, err := range store.List(ctx, "") {
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasSuffix(info.Key, ".parquet") {
			continue
		}
		r, _, err := store.Get(ctx, info.Key)
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(r)
		r.Close()
		if err != nil {
			t.Fatal(err)
		}
		local := filepath.Join(dir, strings.ReplaceAll(info.Key, "/", "__"))
		if err := os.WriteFile(local, data, 0o644); err != nil {
			t.Fatal(err)
		}
		f, err := pqreader.Open(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			t.Fatalf("%s: %v", info.Key, err)
		}
		lf := landedFile{key: info.Key, local: local, rng: map[string]string{}, rows: f.NumRows()}
		for _, kv := range f.Metadata().KeyValueMetadata {
			if strings.HasPrefix(kv.Key, "pqsink.kafka.") && kv.Value != nil {
				lf.rng[kv.Key] = *kv.Value
			}
		}
		files = append(files, lf)
	}
	return files
}

// landedCount sums the record counts in the footers of store's files.
func landedCount(t *testing.T, store objstore.Store) int64 {
	t.Helper()
	ctx := context.Background()
	var n int64
	for info, err := range store.List(ctx, "") {
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasSuffix(info.Key, ".parquet") {
			continue
		}
		ra, err := store.NewReaderAt(ctx, info.Key)
		if err != nil {
			t.Fatal(err)
		}
		f, err := pqreader.Open(ra, ra.Size())
		ra.Close()
		if err != nil {
			t.Fatalf("%s: %v", info.Key, err)
		}
		n += f.NumRows()
	}
	return n
}

// waitLanded waits until the store's files hold want records.
func waitLanded(t *testing.T, store objstore.Store, want int64, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var n int64
	for time.Now().Before(deadline) {
		if n = landedCount(t, store); n >= want {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("after %v the store holds %d records, want %d", timeout, n, want)
}

// duckRow is one landed row as DuckDB reads it.
type duckRow struct {
	topic     string
	partition int
	offset    int64
	timeMs    int64
	key       []byte
	hasKey    bool
	headers   map[string]string
	payload   string // canonical JSON
}

// readWithDuckDB reads every file with DuckDB. Typed payloads come back
// through to_json (timestamps as epoch micros), VARIANT ones as their JSON.
func readWithDuckDB(t *testing.T, db *duckdb.DB, files []landedFile, format string, envelope bool) []duckRow {
	t.Helper()
	var rows []duckRow
	for _, f := range files {
		var sql string
		env := ""
		if envelope {
			env = "_kafka.topic AS topic, _kafka.partition AS part, _kafka.offset::VARCHAR AS off, epoch_ms(_kafka.timestamp)::VARCHAR AS ms, _kafka.key AS key, _kafka.headers AS headers, "
		}
		if format == "json" {
			sql = fmt.Sprintf("SELECT %s to_json(struct_pack(id := id, ts := epoch_us(ts), user := user, country := country, amount := amount, tags := tags, payload := payload))::VARCHAR AS payload FROM read_parquet(%s)",
				env, duckdb.Quote(f.local))
		} else {
			sql = fmt.Sprintf("SELECT %s payload FROM read_parquet(%s)", env, duckdb.Quote(f.local))
		}
		res := db.Query(t, sql)
		for i := range res.Rows {
			r := duckRow{headers: map[string]string{}}
			p := res.Value(i, "payload")
			var raw []byte
			if s, ok := p.(string); ok && format == "json" {
				raw = []byte(s)
			} else {
				var err error
				if raw, err = json.Marshal(p); err != nil {
					t.Fatal(err)
				}
			}
			r.payload = canonJSONText(t, raw)
			if envelope {
				r.topic = res.Value(i, "topic").(string)
				r.partition = int(toInt(t, res.Value(i, "part")))
				r.offset = toInt(t, res.Value(i, "off"))
				r.timeMs = toInt(t, res.Value(i, "ms"))
				if k := res.Value(i, "key"); k != nil {
					b, err := duckdb.Blob(k)
					if err != nil {
						t.Fatal(err)
					}
					r.key, r.hasKey = b, true
				}
				if h, ok := res.Value(i, "headers").([]any); ok {
					for _, e := range h {
						kv := e.(map[string]any)
						v := ""
						if kv["value"] != nil {
							v = kv["value"].(string)
						}
						r.headers[kv["key"].(string)] = v
					}
				}
			}
			rows = append(rows, r)
		}
	}
	return rows
}

func toInt(t *testing.T, v any) int64 {
	t.Helper()
	switch v := v.(type) {
	case string:
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		return n
	case json.Number:
		n, err := v.Int64()
		if err != nil {
			t.Fatal(err)
		}
		return n
	case float64:
		return int64(v)
	}
	t.Fatalf("not an integer: %T %v", v, v)
	return 0
}

// canonJSON renders JSON with sorted keys, null members dropped and
// numbers as float64 text, so that equal values compare equal as strings.
func canonJSONText(t *testing.T, raw []byte) string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("%v: %s", err, raw)
	}
	out, err := json.Marshal(canonAny(v))
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

func canonAny(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, x := range v {
			if x != nil {
				out[k] = canonAny(x)
			}
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = canonAny(x)
		}
		return out
	case json.Number:
		return canonNumber(string(v))
	case string:
		// DuckDB hands exact numbers (DECIMAL, BIGINT, and Variant decimals)
		// over as strings: compare every number by value.
		return canonNumber(v)
	}
	return v
}

func canonNumber(s string) string {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return s
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// expectedPayload is what a produced value should read back as: for typed
// JSON, with the timestamp as epoch micros as readWithDuckDB selects it.
func expectedPayload(t *testing.T, value []byte, format string) string {
	t.Helper()
	if format != "json" {
		return canonJSONText(t, value)
	}
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(value))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		t.Fatal(err)
	}
	ts, err := time.Parse(time.RFC3339Nano, m["ts"].(string))
	if err != nil {
		t.Fatal(err)
	}
	m["ts"] = json.Number(strconv.FormatInt(ts.UnixMicro(), 10))
	if tags, ok := m["tags"].([]any); ok && len(tags) == 0 {
		m["tags"] = []any{}
	}
	raw, _ := json.Marshal(m)
	return canonJSONText(t, raw)
}

// checkExactlyOnce compares the landed rows with what Kafka holds: every
// record exactly once, equal, envelope included. Without an envelope,
// records are matched by payload (the reference events have unique ids).
func checkExactlyOnce(t *testing.T, topic string, truth map[string]produced, rows []duckRow, format string, envelope bool) {
	t.Helper()
	if len(rows) != len(truth) {
		t.Errorf("landed %d rows, Kafka holds %d records", len(rows), len(truth))
	}
	if !envelope {
		want := map[string]int{}
		for _, p := range truth {
			want[expectedPayload(t, p.Value, format)]++
		}
		for _, r := range rows {
			want[r.payload]--
		}
		bad := 0
		for k, n := range want {
			if n != 0 && bad < 5 {
				t.Errorf("payload landed %d times too few: %s", n, k)
				bad++
			}
		}
		return
	}
	seen := map[string]int{}
	bad := 0
	report := func(format string, args ...any) {
		if bad < 10 {
			t.Errorf(format, args...)
		}
		bad++
	}
	for _, r := range rows {
		id := fmt.Sprintf("%d/%d", r.partition, r.offset)
		seen[id]++
		p, ok := truth[id]
		if !ok {
			report("landed %s, which Kafka does not hold", id)
			continue
		}
		if seen[id] > 1 {
			report("%s landed %d times", id, seen[id])
			continue
		}
		if r.topic != topic || r.timeMs != p.TimeMs || r.hasKey != (p.Key != nil) || !bytes.Equal(r.key, p.Key) || !reflect.DeepEqual(r.headers, p.Headers) {
			report("%s envelope: got topic %s time %d key %q (%v) headers %v; want %s %d %q %v", id, r.topic, r.timeMs, r.key, r.hasKey, r.headers, topic, p.TimeMs, p.Key, p.Headers)
		}
		if want := expectedPayload(t, p.Value, format); r.payload != want {
			report("%s payload:\n got %s\nwant %s", id, r.payload, want)
		}
	}
	var missing []string
	for id := range truth {
		if seen[id] == 0 {
			missing = append(missing, id)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("%d records never landed, e.g. %v", len(missing), missing[:min(10, len(missing))])
	}
}

// checkFileRanges checks every file's footer range against its rows and
// key: first offset in the key, records equal to the rows.
func checkFileRanges(t *testing.T, files []landedFile) {
	t.Helper()
	for _, f := range files {
		first := f.rng["pqsink.kafka.first_offset"]
		if first == "" || !strings.Contains(f.key, fmt.Sprintf("%020s", first)) {
			t.Errorf("%s: footer first_offset %q not in the key", f.key, first)
		}
		if f.rng["pqsink.kafka.records"] != strconv.FormatInt(f.rows, 10) {
			t.Errorf("%s: footer says %s records, file has %d rows", f.key, f.rng["pqsink.kafka.records"], f.rows)
		}
	}
}

var buildOnce struct {
	sync.Once
	path string
	err  error
}

// testTransport is a kafka-go transport of the test's own, closed when
// the test ends. An open one (kafka-go's shared DefaultTransport among
// them, which a kafka.Writer or kafka.Client without a Transport uses, and
// Writer.Close does not close) asks its brokers for metadata every few
// seconds for the life of the process; once another test's server (MinIO, a catalog: HTTP) takes
// a gone broker's port, it reads that server's reply as a response, and
// kafka-go allocates arrays by the counts it reads: gigabytes, which
// stopped the suite once at the heap watchdog.
func testTransport(t testing.TB) *kafka.Transport {
	tr := &kafka.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return tr
}

// pqsinkBinary builds the pqsink command once per test binary, for tests
// that run the sink as a separate process.
func pqsinkBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := newBuildDir(buildPrefix)
		if err != nil {
			buildOnce.err = err
			return
		}
		buildOnce.path = filepath.Join(dir, "pqsink")
		cmd := exec.Command("go", "build", "-o", buildOnce.path, "./cmd/pqsink")
		cmd.Dir = testutil.RepoRoot(t)
		if out, err := cmd.CombinedOutput(); err != nil {
			buildOnce.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildOnce.err != nil {
		t.Fatal(buildOnce.err)
	}
	return buildOnce.path
}

// logTail keeps the end of a log and prints it if the test fails.
func logTail(t *testing.T, name string) io.Writer {
	tail := &testutil.Tail{Max: 256 << 10}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("--- %s log (tail) ---\n%s", name, tail.String())
		}
	})
	return tail
}

func base64Decode(s string) ([]byte, error) { return base64.StdEncoding.DecodeString(s) }
