package test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/pqsink/pqsink/archive"
	"github.com/pqsink/pqsink/config"
	"github.com/pqsink/pqsink/connector"
	"github.com/pqsink/pqsink/internal/testutil/duckdb"
	kafkatest "github.com/pqsink/pqsink/internal/testutil/kafka"
	"github.com/pqsink/pqsink/objstore"
	"github.com/pqsink/pqsink/schema/protobuf"
)

// pathProto is the message of TestSinkProtobufPathFields.
const pathProto = `syntax = "proto3";
package pqsink.pathtest;
import "google/protobuf/timestamp.proto";
message Click {
  int64 id = 1;
  optional string country = 2;
  google.protobuf.Timestamp ts = 3;
  Device device = 4;
  bool bot = 5;
}
message Device { string kind = 1; }
`

// TestSinkProtobufPathFields: with format protobuf, from proto_file and
// from a registry, a path
// of {field:country}, {field:device.kind} and {record_time:...} with
// time_field ts (a google.protobuf.Timestamp) files each record under its
// own values and the UTC hour of its ts; an unset optional country and an
// unset device are the null folder, an empty kind as in JSON; a message
// without ts is dead-lettered with reason path; with proto_file, a
// time_field that is not a time stops the sink at its start.
func TestSinkProtobufPathFields(t *testing.T) {
	for _, registry := range []bool{false, true} {
		t.Run(map[bool]string{false: "proto_file", true: "registry"}[registry], func(t *testing.T) {
			testProtobufPathFields(t, registry)
		})
	}
}

func testProtobufPathFields(t *testing.T, registry bool) {
	const schemaID = 51
	dir := t.TempDir()
	protoFile := filepath.Join(dir, "click.proto")
	if err := os.WriteFile(protoFile, []byte(pathProto), 0o644); err != nil {
		t.Fatal(err)
	}
	md, err := protobuf.LoadFile(context.Background(), protoFile, []string{dir}, "pqsink.pathtest.Click")
	if err != nil {
		t.Fatal(err)
	}
	const partitions = 2
	topic, dlq := "proto-path", "proto-path.dlq"
	if registry {
		topic, dlq = "proto-path-reg", "proto-path-reg.dlq"
	}
	broker := kafkatest.Start(t, partitions, topic, dlq)

	type click struct {
		country, kind *string
		ts            *time.Time
	}
	str := func(s string) *string { return &s }
	countries := []*string{str("DE"), nil, str("x y")}
	kinds := []*string{str("phone"), nil, str("")}
	hour := time.Date(2024, 7, 1, 10, 0, 0, 0, time.UTC)
	sent := map[string]click{}
	var msgs []kafka.Message
	fields := md.Fields()
	for i := range 300 {
		c := click{country: countries[i%3], kind: kinds[(i/3)%3]}
		m := dynamicpb.NewMessage(md)
		m.Set(fields.ByName("id"), protoreflect.ValueOfInt64(int64(i)))
		if c.country != nil {
			m.Set(fields.ByName("country"), protoreflect.ValueOfString(*c.country))
		}
		if c.kind != nil {
			dev := dynamicpb.NewMessage(fields.ByName("device").Message())
			dev.Set(dev.Descriptor().Fields().ByName("kind"), protoreflect.ValueOfString(*c.kind))
			m.Set(fields.ByName("device"), protoreflect.ValueOfMessage(dev))
		}
		if i%41 != 7 {
			ts := hour.Add(time.Duration(i%4)*time.Hour + time.Duration(i)*time.Second)
			c.ts = &ts
			tsd := fields.ByName("ts").Message()
			pb := dynamicpb.NewMessage(tsd)
			pb.Set(tsd.Fields().ByName("seconds"), protoreflect.ValueOfInt64(ts.Unix()))
			pb.Set(tsd.Fields().ByName("nanos"), protoreflect.ValueOfInt32(int32(ts.Nanosecond())))
			m.Set(fields.ByName("ts"), protoreflect.ValueOfMessage(pb))
		}
		b, err := proto.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		if registry {
			b = append(protobuf.AppendWire(nil, schemaID, []int{0}), b...)
		}
		key := fmt.Sprintf("k%04d", i)
		sent[key] = c
		msgs = append(msgs, kafka.Message{Key: []byte(key), Value: b, Time: time.Now()})
	}
	w := &kafka.Writer{Transport: testTransport(t), Addr: kafka.TCP(broker.Brokers...), Topic: topic, Balancer: &kafka.Hash{}, RequiredAcks: kafka.RequireAll, BatchTimeout: time.Millisecond}
	defer w.Close()
	if err := w.WriteMessages(context.Background(), msgs...); err != nil {
		t.Fatal(err)
	}
	truth := readTopic(t, broker.Brokers, topic, partitions)

	storeDir := t.TempDir()
	cfg := sinkConfig{brokers: broker.Brokers, group: topic, topic: topic, storeURL: "file://" + storeDir, format: "protobuf", envelope: true,
		records: 100000, interval: "10m", path: "c={field:country}/k={field:device.kind}/h={record_time:2006-01-02-15}/{partition}-{first_offset}.parquet",
		extra: "time_field: ts\ndead_letter:\n  topic: " + dlq + "\n"}
	format := fmt.Sprintf("format:\n  type: protobuf\n  proto_file: %s\n  import_paths: [%s]\n  message: pqsink.pathtest.Click\n", protoFile, dir)
	if registry {
		reg := &testRegistry{schemas: map[int]string{}, gets: map[int]int{}, answers: map[string]any{
			fmt.Sprintf("/schemas/ids/%d", schemaID): map[string]any{"schemaType": "PROTOBUF", "schema": pathProto},
		}}
		srv := httptest.NewServer(reg)
		defer srv.Close()
		format = fmt.Sprintf("format:\n  type: protobuf\n  registry: {url: %q, timeout: 2s}\n", srv.URL)
	}
	text := strings.Replace(cfg.yaml(t), "format:\n  type: protobuf\n", format, 1)

	if !registry {
		// A time_field that holds no time is refused before anything runs.
		if err := newSinkErr(t, strings.Replace(text, "time_field: ts", "time_field: bot", 1)); err == nil ||
			!strings.Contains(err.Error(), "time_field bot: not a time") {
			t.Errorf("time_field of a bool: %v, want it refused", err)
		}
	}

	sink, stop := startSink(t, text)
	waitConsumed(t, sink, int64(len(truth)))
	stop()
	noTime := 0
	for _, c := range sent {
		if c.ts == nil {
			noTime++
		}
	}
	st := sink.Stats().Snapshot()
	if got := st.Rejects[[2]string{"path", "dead_letter"}]; got != int64(noTime) || st.RecordsUploaded != int64(len(sent)-noTime) {
		t.Errorf("uploaded %d, rejects %v; want %d uploaded and %d path/dead_letter", st.RecordsUploaded, st.Rejects, len(sent)-noTime, noTime)
	}

	store, err := objstore.Open(context.Background(), "file://"+storeDir)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	files := download(t, store, t.TempDir())
	checkFileRanges(t, files)
	db := duckdb.Start(t)
	seen := map[string]int{}
	folder := func(v *string) string {
		if v == nil || *v == "" {
			return archive.HiveNull
		}
		return archive.Escape(*v)
	}
	for _, f := range files {
		parts := strings.Split(f.key, "/")
		if len(parts) != 4 {
			t.Errorf("file %s: not c=/k=/h=/", f.key)
			continue
		}
		res := db.Query(t, fmt.Sprintf(`SELECT _kafka.key::VARCHAR AS k FROM read_parquet(%s)`, duckdb.Quote(f.local)))
		for i := range res.Rows {
			key := fmt.Sprint(res.Value(i, "k"))
			c := sent[key]
			seen[key]++
			want := []string{"c=" + folder(c.country), "k=" + folder(c.kind), "h=?"}
			if c.ts != nil {
				want[2] = "h=" + c.ts.UTC().Format("2006-01-02-15")
			}
			if got := strings.Join(parts[:3], "/"); got != strings.Join(want, "/") {
				t.Errorf("record %s in %s, want %s", key, got, strings.Join(want, "/"))
			}
		}
	}
	checkLanded(t, sent, seen, func(c click) bool { return c.ts != nil })
}

// newSinkErr is the error of making a sink of cfgText (closed at once
// when made).
func newSinkErr(t *testing.T, cfgText string) error {
	t.Helper()
	cfg, err := config.Parse([]byte(cfgText), os.LookupEnv)
	if err != nil {
		return err
	}
	sink, err := connector.New(context.Background(), cfg, slog.New(slog.DiscardHandler))
	if err == nil {
		sink.Close()
	}
	return err
}
