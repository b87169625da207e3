package test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/pqsink/pqsink/config"
	"github.com/pqsink/pqsink/connector/source"
	"github.com/pqsink/pqsink/internal/testutil"
	"github.com/pqsink/pqsink/internal/testutil/duckdb"
	kafkatest "github.com/pqsink/pqsink/internal/testutil/kafka"
	"github.com/pqsink/pqsink/internal/testutil/minio"
	"github.com/pqsink/pqsink/internal/testutil/protoref"
	"github.com/pqsink/pqsink/objstore"
	pqreader "github.com/pqsink/pqsink/reader"
	"github.com/pqsink/pqsink/schema/protobuf"
	"github.com/pqsink/pqsink/test/crossread"
)

// protoMessages returns n AllTypes values cycling through the test
// messages, encoded by protoc --encode (even indexes) and by Go's
// protobuf library (odd ones).
func protoMessages(t *testing.T, n int) [][]byte {
	t.Helper()
	md := protoref.AllTypes(t)
	msgs, names := protoref.Messages(t)
	names = protoref.CanonicalNames(names)
	var byProtoc, byGo [][]byte
	for _, name := range names {
		byProtoc = append(byProtoc, protoref.Encode(t, msgs[name]))
		b, err := proto.MarshalOptions{Deterministic: true}.Marshal(protoref.FromText(t, md, msgs[name]))
		if err != nil {
			t.Fatal(err)
		}
		byGo = append(byGo, b)
	}
	out := make([][]byte, n)
	for i := range out {
		if i%2 == 0 {
			out[i] = byProtoc[(i/2)%len(names)]
		} else {
			out[i] = byGo[(i/2)%len(names)]
		}
	}
	return out
}

// produceValues writes values to topic with keys k0000..., then the
// poison values with keys poison-0...
func produceValues(t *testing.T, brokers []string, topic string, values, poison [][]byte) {
	t.Helper()
	var msgs []kafka.Message
	for i, v := range values {
		msgs = append(msgs, kafka.Message{Key: fmt.Appendf(nil, "k%04d", i), Value: v})
	}
	for i, v := range poison {
		msgs = append(msgs, kafka.Message{Key: fmt.Appendf(nil, "poison-%d", i), Value: v})
	}
	w := &kafka.Writer{Transport: testTransport(t), Addr: kafka.TCP(brokers...), Topic: topic, Balancer: &kafka.Hash{}, RequiredAcks: kafka.RequireAll, BatchTimeout: time.Millisecond}
	defer w.Close()
	if err := w.WriteMessages(context.Background(), msgs...); err != nil {
		t.Fatal(err)
	}
}

// TestSinkProtobufFile: format.type protobuf with proto_file, import_paths
// and message, into MinIO. Messages of every type of the mapping, encoded
// by protoc and by Go's protobuf library, land exactly once; each row, as
// pqsink's reader, arrow-go and DuckDB read it, is protoc --decode's view
// of its record; bad wire bytes go to the dead letters with reason decode;
// every footer names the message.
func TestSinkProtobufFile(t *testing.T) {
	const partitions, n = 2, 60
	topic, dlq, target := "proto-events", "proto-events.dlq", "proto-events.replayed"
	broker := kafkatest.Start(t, partitions, topic, dlq, target)
	poison := [][]byte{{0x72, 0x01, 0xff}, {0x08}, {0x0d, 1, 2, 3, 4}}
	produceValues(t, broker.Brokers, topic, protoMessages(t, n), poison)
	truth := readTopic(t, broker.Brokers, topic, partitions)

	srv := minio.Start(t)
	bucket := srv.NewBucket(t)
	file, imports := protoref.AllTypesFile(t)
	cfg := sinkConfig{brokers: broker.Brokers, group: "proto-file", topic: topic, format: "protobuf", envelope: true,
		records: 25, interval: "10m", path: "{topic}/{topic}+{partition}+{first_offset}.parquet",
		storeURL: fmt.Sprintf("s3://%s/archive", bucket), s3: &s3Target{endpoint: srv.Endpoint, region: srv.Region, access: srv.AccessKey, secret: srv.SecretKey},
		extra: "dead_letter:\n  topic: " + dlq + "\n"}
	text := strings.Replace(cfg.yaml(t), "format:\n  type: protobuf\n",
		fmt.Sprintf("format:\n  type: protobuf\n  proto_file: %s\n  import_paths: [%s]\n  message: pqsink.test.AllTypes\n", file, imports[0]), 1)
	ctx := context.Background()
	store, err := objstore.Open(ctx, cfg.storeURL+"?endpoint="+srv.Endpoint+"&path_style=true&region="+srv.Region,
		objstore.StaticCredentials(srv.AccessKey, srv.SecretKey, ""))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	sink, stop := startSink(t, text)
	waitConsumed(t, sink, int64(len(truth)))
	stop()
	st := sink.Stats().Snapshot()
	if st.RecordsUploaded != n || st.Rejects[[2]string{"decode", "dead_letter"}] != int64(len(poison)) {
		t.Errorf("stats: uploaded %d, rejects %v", st.RecordsUploaded, st.Rejects)
	}
	letters := readTopic(t, broker.Brokers, dlq, partitions)
	if len(letters) != len(poison) {
		t.Errorf("%d dead letters, want %d", len(letters), len(poison))
	}
	for _, l := range letters {
		if h := decodeHeaders(t, l.Headers); !strings.HasPrefix(string(l.Key), "poison-") || h["pqsink.reason"] != "decode" || !strings.Contains(h["pqsink.error"], "protobuf record: ") {
			t.Errorf("dead letter %s: headers %v", l.Key, h)
		}
	}
	files := download(t, store, t.TempDir())
	checkFileRanges(t, files)
	md := protoref.AllTypes(t)
	checkProtobufRows(t, files, truth, func(p produced) []byte {
		return protoref.Expect(t, protoref.FromText(t, md, protoref.Decode(t, p.Value)))
	})

	// Replay: the records Go's protobuf library wrote (odd keys) come back
	// byte for byte; protoc's, whose map entries are in its hash order,
	// come back as the same messages.
	replayProtobuf(t, text, cfg.storeURL, broker.Brokers, target, partitions, truth, md, func(p produced) bool {
		var i int
		fmt.Sscanf(string(p.Key), "k%04d", &i)
		return i%2 == 1
	})
}

// checkProtobufRows reads every landed file with pqsink's reader, arrow-go
// and DuckDB. Each row must be what expect says of the record at its
// offset, every record not keyed poison-* must land exactly once, and
// every footer must name the message.
func checkProtobufRows(t *testing.T, files []landedFile, truth map[string]produced, expect func(produced) []byte) {
	t.Helper()
	db := duckdb.Start(t)
	seen := map[string]int{}
	for _, f := range files {
		data, err := os.ReadFile(f.local)
		if err != nil {
			t.Fatal(err)
		}
		pf, err := pqreader.Open(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			t.Fatal(err)
		}
		named := false
		for _, kv := range pf.Metadata().KeyValueMetadata {
			named = named || kv.Key == protobuf.MessageKey && kv.Value != nil && *kv.Value == protoref.AllTypesMessage
		}
		if !named {
			t.Errorf("%s: no %s in the footer", f.key, protobuf.MessageKey)
		}
		// arrow-go sees the column chunks pqsink's reader sees.
		mine, err := crossread.PQSink(f.local)
		if err != nil {
			t.Fatal(err)
		}
		arrow, err := crossread.Arrow(f.local)
		if err != nil {
			t.Fatalf("%s: arrow-go: %v", f.key, err)
		}
		if !reflect.DeepEqual(mine, arrow) {
			t.Errorf("%s: arrow-go reads other column chunks than pqsink's reader", f.key)
		}

		rows, err := pf.Rows()
		if err != nil {
			t.Fatal(err)
		}
		wants := map[string][]byte{}
		for {
			v, err := rows.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			var row map[string]json.RawMessage
			if err := json.Unmarshal(v.AppendJSON(nil), &row); err != nil {
				t.Fatal(err)
			}
			var env struct {
				Partition int   `json:"partition"`
				Offset    int64 `json:"offset"`
			}
			if err := json.Unmarshal(row["_kafka"], &env); err != nil {
				t.Fatal(err)
			}
			delete(row, "_kafka")
			id := fmt.Sprintf("%d/%d", env.Partition, env.Offset)
			seen[id]++
			p, ok := truth[id]
			if !ok {
				t.Errorf("%s: row %s is no record of the topic", f.key, id)
				continue
			}
			want := expect(p)
			wants[id] = want
			got, _ := json.Marshal(row)
			got = protoref.SortMaps(t, got)
			if ok, err := testutil.JSONEqual(got, want); !ok || err != nil {
				t.Errorf("%s: record %s:\n got %s\nwant %s", f.key, id, got, want)
			}
		}
		checkProtobufDuckDB(t, db, f, wants)
	}
	for id, p := range truth {
		want := 1
		if strings.HasPrefix(string(p.Key), "poison-") {
			want = 0
		}
		if seen[id] != want {
			t.Errorf("record %s (key %s) landed %d times, want %d", id, p.Key, seen[id], want)
		}
	}
}

// protoDuckQuery reads the columns of an AllTypes file that DuckDB types
// exactly (every scalar, lists, groups, string maps, the oneof, the
// timestamp, the wrappers) as one JSON object per row.
const protoDuckQuery = `SELECT _kafka.partition::VARCHAR || '/' || _kafka.offset::VARCHAR AS id, to_json(x)::VARCHAR AS j FROM (
  SELECT _kafka, i32, i64, u32, u64, s32, s64, f32, f64, sf32, sf64, flag, fl, db, name, base64(blob) AS blob, color::VARCHAR AS color,
    opt_i32, opt_name, "inner", nums, tags, inners, counts, "text", "number", nested, epoch_ns(ts) AS ts, dur,
    w_i32, w_str, w_bool, w_u64, w_dbl, base64(w_bytes) AS w_bytes, colors, labels, big
  FROM read_parquet(%s)) x`

// checkProtobufDuckDB compares DuckDB's rows of f with what the reference
// says, by record id, on the columns of protoDuckQuery.
func checkProtobufDuckDB(t *testing.T, db *duckdb.DB, f landedFile, wants map[string][]byte) {
	t.Helper()
	res := db.Query(t, fmt.Sprintf(protoDuckQuery, duckdb.Quote(f.local)))
	if len(res.Rows) != len(wants) {
		t.Errorf("%s: DuckDB read %d rows, want %d", f.key, len(res.Rows), len(wants))
	}
	for i := range res.Rows {
		id := res.Value(i, "id").(string)
		var got map[string]any
		d := json.NewDecoder(strings.NewReader(res.Value(i, "j").(string)))
		d.UseNumber()
		if err := d.Decode(&got); err != nil {
			t.Fatal(err)
		}
		delete(got, "_kafka")
		var want map[string]any
		d = json.NewDecoder(bytes.NewReader(wants[id]))
		d.UseNumber()
		if err := d.Decode(&want); err != nil {
			t.Fatal(err)
		}
		for k := range want {
			if _, ok := got[k]; !ok {
				delete(want, k) // not in the query
			}
		}
		if ts, ok := want["ts"].(string); ok {
			tm, err := time.Parse(time.RFC3339Nano, ts)
			if err != nil {
				t.Fatal(err)
			}
			// DuckDB reads a TIMESTAMP(NANOS, UTC) as TIMESTAMP WITH
			// TIME ZONE, in microseconds (see duckLeaf).
			want["ts"] = json.Number(fmt.Sprint(tm.UnixNano() / 1000 * 1000))
		}
		gj, _ := json.Marshal(got)
		wj, _ := json.Marshal(want)
		if ok, err := testutil.JSONEqual(protoref.SortMaps(t, gj), protoref.SortMaps(t, wj)); !ok || err != nil {
			t.Errorf("%s: DuckDB record %s:\n got %s\nwant %s", f.key, id, gj, wj)
		}
	}
}

// replayProtobuf replays the sink's archive (the sink config text, its
// store URL) into target and checks each record's value against the
// original of the same key: byte for byte when exact says the original is
// canonical (as Go's protobuf library writes it deterministically), and
// as the same message (parsed by Go's protobuf library, after the header
// of headerLen bytes) otherwise. The keys poison-* are not in the
// archive.
func replayProtobuf(t *testing.T, text, storeURL string, brokers []string, target string, partitions int,
	truth map[string]produced, md protoreflect.MessageDescriptor, exact func(produced) bool) {
	t.Helper()
	rcfg, err := config.ParseReplay([]byte(text), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(logTail(t, "replay"), nil))
	r, err := source.New(context.Background(), rcfg, source.Options{From: storeURL, Topic: target, PathTemplate: rcfg.Path, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := r.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	byKey := map[string]produced{}
	for _, p := range truth {
		byKey[string(p.Key)] = p
	}
	replayed := readTopic(t, brokers, target, partitions)
	good, exactN := 0, 0
	for _, p := range truth {
		if !strings.HasPrefix(string(p.Key), "poison-") {
			good++
		}
	}
	if len(replayed) != good {
		t.Errorf("replay produced %d records, want %d", len(replayed), good)
	}
	for _, got := range replayed {
		orig, ok := byKey[string(got.Key)]
		if !ok {
			t.Errorf("replayed record with key %q is not in the topic", got.Key)
			continue
		}
		if exact(orig) {
			exactN++
			if !bytes.Equal(got.Value, orig.Value) {
				t.Errorf("record %s: replayed value\n% x\nwant\n% x", got.Key, got.Value, orig.Value)
			}
			continue
		}
		a, b := dynamicpb.NewMessage(md), dynamicpb.NewMessage(md)
		if err := proto.Unmarshal(got.Value, a); err != nil {
			t.Fatal(err)
		}
		if err := proto.Unmarshal(orig.Value, b); err != nil {
			t.Fatal(err)
		}
		if !proto.Equal(a, b) {
			t.Errorf("record %s: replayed message %v, want %v", got.Key, a, b)
		}
	}
	if exactN == 0 {
		t.Errorf("no record was checked byte for byte")
	}
}
