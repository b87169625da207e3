package test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/pqsink/pqsink/archive"
	"github.com/pqsink/pqsink/internal/schemaregistry"
	"github.com/pqsink/pqsink/internal/testutil/duckdb"
	kafkatest "github.com/pqsink/pqsink/internal/testutil/kafka"
	"github.com/pqsink/pqsink/objstore"
	"github.com/pqsink/pqsink/schema/avro"
)

// The writer schemas of TestSinkAvroPathFields: v2 moves the fields the
// path reads behind a new one, so that their positions differ.
const (
	pathIDv1     = 31
	pathIDv2     = 32
	pathSchemaV1 = `{"type":"record","name":"click","fields":[
 {"name":"id","type":"long"},
 {"name":"country","type":["null","string"],"default":null},
 {"name":"ts","type":["null",{"type":"long","logicalType":"timestamp-millis"}],"default":null}]}`
	pathSchemaV2 = `{"type":"record","name":"click","fields":[
 {"name":"id","type":"long"},
 {"name":"page","type":"string","default":"/"},
 {"name":"country","type":["null","string"],"default":null},
 {"name":"ts","type":["null",{"type":"long","logicalType":"timestamp-millis"}],"default":null}]}`
)

// pathClick is one record of TestSinkAvroPathFields; a nil field is null.
type pathClick struct {
	id      int64
	v2      bool
	country *string
	ts      *time.Time
}

func (c pathClick) encode() []byte {
	id := uint32(pathIDv1)
	b := avro.AppendLong(nil, c.id)
	if c.v2 {
		id = pathIDv2
		b = avro.AppendLong(b, 1)
		b = append(b, '/')
	}
	if c.country == nil {
		b = avro.AppendLong(b, 0)
	} else {
		b = avro.AppendLong(avro.AppendLong(b, 1), int64(len(*c.country)))
		b = append(b, *c.country...)
	}
	if c.ts == nil {
		b = avro.AppendLong(b, 0)
	} else {
		b = avro.AppendLong(avro.AppendLong(b, 1), c.ts.UnixMilli())
	}
	return append(schemaregistry.AppendWire(nil, id), b...)
}

// TestSinkAvroPathFields: with format avro, a path of {field:country} and
// {record_time:...} with time_field ts files each record under its own
// country and the UTC day of its ts, read with its writer schema (two
// schemas, the fields at different positions), not under the Kafka
// timestamp's day; a null country is the null folder, a value with a
// slash is escaped, and a record without ts is dead-lettered with reason
// path. DuckDB reads every file and finds each good record once, in the
// folder its values say.
func TestSinkAvroPathFields(t *testing.T) {
	const partitions = 2
	topic, dlq := "avro-path", "avro-path.dlq"
	broker := kafkatest.Start(t, partitions, topic, dlq)
	reg := &testRegistry{schemas: map[int]string{pathIDv1: pathSchemaV1, pathIDv2: pathSchemaV2}, gets: map[int]int{}}
	srv := httptest.NewServer(reg)
	defer srv.Close()

	str := func(s string) *string { return &s }
	countries := []*string{str("DE"), str("FR"), nil, str("a/b"), str("")}
	days := []time.Time{
		time.Date(2024, 2, 28, 23, 59, 59, 0, time.UTC),
		time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC),
		time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC),
	}
	sent := map[string]pathClick{}
	var msgs []kafka.Message
	now := time.Now()
	for i := range 600 {
		c := pathClick{id: int64(i), v2: i%3 == 0, country: countries[i%len(countries)]}
		if i%97 != 50 {
			ts := days[i%len(days)].Add(time.Duration(i%500) * time.Millisecond)
			c.ts = &ts
		}
		key := fmt.Sprintf("k%04d", i)
		sent[key] = c
		msgs = append(msgs, kafka.Message{Key: []byte(key), Value: c.encode(), Time: now})
	}
	w := &kafka.Writer{Transport: testTransport(t), Addr: kafka.TCP(broker.Brokers...), Topic: topic, Balancer: &kafka.Hash{}, RequiredAcks: kafka.RequireAll, BatchTimeout: time.Millisecond}
	defer w.Close()
	if err := w.WriteMessages(context.Background(), msgs...); err != nil {
		t.Fatal(err)
	}
	truth := readTopic(t, broker.Brokers, topic, partitions)
	noTime := 0
	for _, c := range sent {
		if c.ts == nil {
			noTime++
		}
	}

	dir := t.TempDir()
	cfg := sinkConfig{brokers: broker.Brokers, group: "avro-path", topic: topic, storeURL: "file://" + dir, format: "avro", envelope: true,
		records: 100000, interval: "10m", path: "country={field:country}/day={record_time:2006-01-02}/{partition}-{first_offset}.parquet",
		extra: "time_field: ts\ndead_letter:\n  topic: " + dlq + "\n"}
	text := strings.Replace(cfg.yaml(t), "format:\n  type: avro\n",
		fmt.Sprintf("format:\n  type: avro\n  registry: {url: %q, timeout: 2s}\n", srv.URL), 1)
	sink, stop := startSink(t, text)
	waitConsumed(t, sink, int64(len(truth)))
	stop()
	st := sink.Stats().Snapshot()
	if got := st.Rejects[[2]string{"path", "dead_letter"}]; got != int64(noTime) {
		t.Errorf("rejects %v, want %d path/dead_letter", st.Rejects, noTime)
	}
	letters := readTopic(t, broker.Brokers, dlq, partitions)
	if len(letters) != noTime {
		t.Errorf("%d dead letters, want %d", len(letters), noTime)
	}
	for _, l := range letters {
		h := decodeHeaders(t, l.Headers)
		if c, ok := sent[string(l.Key)]; !ok || c.ts != nil || h["pqsink.reason"] != "path" || !strings.Contains(h["pqsink.error"], "time_field ts is missing or null") {
			t.Errorf("dead letter %s: headers %v", l.Key, h)
		}
	}

	store, err := objstore.Open(context.Background(), "file://"+dir)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	files := download(t, store, t.TempDir())
	checkFileRanges(t, files)
	db := duckdb.Start(t)
	seen := map[string]int{}
	folders := map[string]bool{}
	for _, f := range files {
		parts := strings.Split(f.key, "/")
		if len(parts) != 3 || !strings.HasPrefix(parts[0], "country=") || !strings.HasPrefix(parts[1], "day=") {
			t.Errorf("file %s is not under country=/day=", f.key)
			continue
		}
		folders[parts[0]+"/"+parts[1]] = true
		res := db.Query(t, fmt.Sprintf(`SELECT _kafka.key::VARCHAR AS k, id, country, strftime(ts AT TIME ZONE 'UTC', '%%Y-%%m-%%d') AS day
			FROM read_parquet(%s)`, duckdb.Quote(f.local)))
		for i := range res.Rows {
			key := fmt.Sprint(res.Value(i, "k"))
			c, ok := sent[key]
			if !ok {
				t.Errorf("%s: unknown key %q", f.key, key)
				continue
			}
			seen[key]++
			wantCountry := archive.HiveNull
			if c.country != nil && *c.country != "" {
				wantCountry = url.PathEscape(*c.country)
			}
			if got := strings.TrimPrefix(parts[0], "country="); got != wantCountry {
				t.Errorf("%s: record %s of country %v in folder %s", f.key, key, c.country, got)
			}
			if got := strings.TrimPrefix(parts[1], "day="); c.ts == nil || got != c.ts.UTC().Format("2006-01-02") {
				t.Errorf("%s: record %s of ts %v in folder %s", f.key, key, c.ts, got)
			}
			if day := fmt.Sprint(res.Value(i, "day")); c.ts != nil && day != c.ts.UTC().Format("2006-01-02") {
				t.Errorf("%s: record %s: ts column's day %s, want %s", f.key, key, day, c.ts.UTC().Format("2006-01-02"))
			}
		}
	}
	checkLanded(t, sent, seen, func(c pathClick) bool { return c.ts != nil })
	// Five countries (null and "" share the null folder) by three days.
	if len(folders) != 4*3 {
		t.Errorf("%d folders, want 12: %v", len(folders), folders)
	}
}

// checkLanded checks that each record of sent that lands (by lands) was
// seen in the files once, and every other never.
func checkLanded[T any](t *testing.T, sent map[string]T, seen map[string]int, lands func(T) bool) {
	t.Helper()
	for key, r := range sent {
		want := 0
		if lands(r) {
			want = 1
		}
		if seen[key] != want {
			t.Errorf("record %s landed %d times, want %d", key, seen[key], want)
		}
	}
}

// TestSinkAvroPathFieldsKilled: the sink of TestSinkAvroPathFields (Avro,
// {field:country} and the day of time_field ts in the path) is killed
// with SIGKILL at random moments while records arrive, then runs once to
// the end: every good record is in exactly one file, in the folders of its
// values (DuckDB reads them all), and every record without ts is in
// exactly one dead-letter object. A record's path is a function of its
// bytes and schema id, so the files a restart writes again are the ones
// the killed run began.
func TestSinkAvroPathFieldsKilled(t *testing.T) {
	const partitions, n, kills = 3, 6000, 6
	topic := "avro-path-kill"
	broker := kafkatest.StartWith(t, []kfake.Opt{kfake.GroupMinSessionTimeout(500 * time.Millisecond)}, partitions, topic)
	reg := &testRegistry{schemas: map[int]string{pathIDv1: pathSchemaV1, pathIDv2: pathSchemaV2}, gets: map[int]int{}}
	srv := httptest.NewServer(reg)
	defer srv.Close()

	str := func(s string) *string { return &s }
	countries := []*string{str("DE"), str("FR"), nil, str("a/b")}
	sent := map[string]pathClick{}
	var msgs []kafka.Message
	for i := range n {
		c := pathClick{id: int64(i), v2: i%5 == 0, country: countries[i%len(countries)]}
		if i%211 != 17 {
			ts := time.Date(2024, 3, 1+i%3, 12, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Millisecond)
			c.ts = &ts
		}
		key := fmt.Sprintf("k%05d", i)
		sent[key] = c
		msgs = append(msgs, kafka.Message{Key: []byte(key), Value: c.encode()})
	}
	producing := make(chan error, 1)
	go func() {
		w := &kafka.Writer{Transport: testTransport(t), Addr: kafka.TCP(broker.Brokers...), Topic: topic, Balancer: &kafka.Hash{}, RequiredAcks: kafka.RequireAll, BatchTimeout: time.Millisecond}
		defer w.Close()
		for i := 0; i < len(msgs); i += 500 {
			if err := w.WriteMessages(context.Background(), msgs[i:min(i+500, len(msgs))]...); err != nil {
				producing <- err
				return
			}
			time.Sleep(600 * time.Millisecond)
		}
		producing <- nil
	}()

	dir, dlDir := t.TempDir(), t.TempDir()
	cfg := sinkConfig{brokers: broker.Brokers, group: topic, topic: topic, storeURL: "file://" + dir, format: "avro", envelope: true,
		records: 400, interval: "300ms", path: "country={field:country}/day={record_time:2006-01-02}/{partition}-{first_offset}.parquet",
		extra: "time_field: ts\ndead_letter:\n  url: file://" + dlDir + "\n"}
	text := strings.Replace(cfg.yaml(t), "format:\n  type: avro\n", fmt.Sprintf("format:\n  type: avro\n  registry: {url: %q, timeout: 2s}\n", srv.URL), 1)
	text = replaceLine(text, "  session_timeout: 6s", "  session_timeout: 1s")
	text = replaceLine(text, "  heartbeat_interval: 500ms", "  heartbeat_interval: 200ms")
	text = replaceLine(text, "  rebalance_timeout: 10s", "  rebalance_timeout: 3s")
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 2))
	for i := range kills {
		p := startSinkProcess(t, fmt.Sprintf("sink-%d", i), text)
		time.Sleep(time.Duration(400+rng.IntN(1600)) * time.Millisecond)
		p.kill(t)
	}
	if err := <-producing; err != nil {
		t.Fatal(err)
	}
	good := 0
	for _, c := range sent {
		if c.ts != nil {
			good++
		}
	}
	last := startSinkProcess(t, "sink-last", text)
	store, err := objstore.Open(context.Background(), "file://"+dir)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	waitLanded(t, store, int64(good), 3*time.Minute)
	last.waitLog(t, "generation started", time.Minute)
	last.terminate(t, 30*time.Second)

	files := download(t, store, t.TempDir())
	checkFileRanges(t, files)
	db := duckdb.Start(t)
	seen := map[string]int{}
	for _, f := range files {
		parts := strings.Split(f.key, "/")
		res := db.Query(t, fmt.Sprintf(`SELECT _kafka.key::VARCHAR AS k FROM read_parquet(%s)`, duckdb.Quote(f.local)))
		for i := range res.Rows {
			key := fmt.Sprint(res.Value(i, "k"))
			c := sent[key]
			seen[key]++
			wantCountry := archive.HiveNull
			if c.country != nil {
				wantCountry = archive.Escape(*c.country)
			}
			if c.ts == nil || len(parts) != 3 || parts[0] != "country="+wantCountry || parts[1] != "day="+c.ts.Format("2006-01-02") {
				t.Errorf("record %s (country %v, ts %v) in %s", key, c.country, c.ts, f.key)
			}
		}
	}
	checkLanded(t, sent, seen, func(c pathClick) bool { return c.ts != nil })
	letters := readLetterObjects(t, "file://"+dlDir) // fails on a letter in two objects
	if len(letters) != n-good {
		t.Errorf("%d dead letters, want %d", len(letters), n-good)
	}
	for _, l := range letters {
		if c, ok := sent[string(l.Key)]; !ok || c.ts != nil {
			t.Errorf("dead letter %s is not a record without ts", l.Key)
		}
	}
	t.Logf("%d kills, %d files, %d dead letters", kills, len(files), len(letters))
}
