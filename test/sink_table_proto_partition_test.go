package test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	itable "github.com/apache/iceberg-go/table"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/pqsink/pqsink/internal/testutil/duckdb"
	kafkatest "github.com/pqsink/pqsink/internal/testutil/kafka"
	"github.com/pqsink/pqsink/schema/protobuf"
)

// partProto is the message of TestTableSinkProtobufPartitioned.
const partProto = `syntax = "proto3";
package pqsink.part;
message Ev {
  int64 id = 1;
  string country = 4;
  Payload payload = 7;
}
message Payload {
  string session = 1;
  Nested nested = 2;
}
message Nested {
  int32 level = 1;
}
`

// protoEvent is one record of the test's stream.
type protoEvent struct {
	id      int64
	country string // "" is omitted on the wire: proto3's default
	level   int    // -1: no payload; -2: no nested; else the level (0 omitted on the wire)
}

func (e protoEvent) encode() []byte {
	b := protowire.AppendVarint(protowire.AppendTag(nil, 1, protowire.VarintType), uint64(e.id))
	if e.country != "" {
		b = protowire.AppendString(protowire.AppendTag(b, 4, protowire.BytesType), e.country)
	}
	if e.level == -1 {
		return b
	}
	p := protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), "s")
	if e.level != -2 {
		var n []byte
		if e.level != 0 {
			n = protowire.AppendVarint(protowire.AppendTag(nil, 1, protowire.VarintType), uint64(e.level))
		}
		p = protowire.AppendBytes(protowire.AppendTag(p, 2, protowire.BytesType), n)
	}
	return protowire.AppendBytes(protowire.AppendTag(b, 7, protowire.BytesType), p)
}

// TestTableSinkProtobufPartitioned archives a Protobuf topic, with
// format.proto_file and with a registry, into a table partitioned by
// bucket[2] of an int64, identity of a string and identity of an int32
// below two messages. An int32 that the message omits below a present
// message is 0 (proto3's default), as the files hold it; an absent
// message is the null partition. A message
// that does not decode is dead-lettered with reason decode. DuckDB reads
// every data file: every good record once, in the folders its values say;
// iceberg-go's filtered scans prune files and return the matching rows.
func TestTableSinkProtobufPartitioned(t *testing.T) {
	for _, mode := range []string{"file", "registry"} {
		t.Run(mode, func(t *testing.T) { testProtoPartitioned(t, mode) })
	}
}

func testProtoPartitioned(t *testing.T, mode string) {
	const partitions, n, schemaID = 2, 400, 41
	env := newTableEnv(t, "proto-parted-"+mode)
	dlq := env.topic + ".dlq"
	broker := kafkatest.Start(t, partitions, env.topic, dlq)

	format := ""
	switch mode {
	case "file":
		path := filepath.Join(t.TempDir(), "part.proto")
		if err := os.WriteFile(path, []byte(partProto), 0o644); err != nil {
			t.Fatal(err)
		}
		format = fmt.Sprintf("format:\n  type: protobuf\n  proto_file: %s\n  message: pqsink.part.Ev\n", path)
	case "registry":
		reg := &testRegistry{schemas: map[int]string{}, gets: map[int]int{}, answers: map[string]any{
			fmt.Sprintf("/schemas/ids/%d", schemaID): map[string]any{"schemaType": "PROTOBUF", "schema": partProto},
		}}
		srv := httptest.NewServer(reg)
		t.Cleanup(srv.Close)
		format = fmt.Sprintf("format:\n  type: protobuf\n  registry: {url: %q, timeout: 2s}\n", srv.URL)
	}
	frame := func(body []byte) []byte {
		if mode == "registry" {
			return append(protobuf.AppendWire(nil, schemaID, []int{0}), body...)
		}
		return body
	}
	c := sinkConfig{
		brokers: broker.Brokers, group: "proto-parted", topic: env.topic, storeURL: env.warehouse,
		format: "protobuf", envelope: true, records: 100000, interval: "500ms", noPath: true,
		extra: fmt.Sprintf(`table:
  format: iceberg
  catalog:
    type: sql
    uri: %s
  namespace: kafka
  name: "{topic}"
  commit_interval: 1s
  partition_by: ["bucket[2](id)", "identity(country)", "identity(payload.nested.level)"]
dead_letter:
  topic: %s
`, env.uri, dlq),
	}
	text := strings.Replace(c.yaml(t), "format:\n  type: protobuf\n", format, 1)

	events := map[string]protoEvent{}
	var values [][]byte
	for i := range n {
		e := protoEvent{id: int64(i), country: []string{"DE", "FR", "DE", "", "FR"}[i%5], level: i % 3}
		switch i % 7 {
		case 0:
			e.level = -1
		case 1:
			e.level = -2
		}
		events[fmt.Sprintf("k%04d", i)] = e
		values = append(values, frame(e.encode()))
	}
	// Field 4 (country) as a varint: not its wire type.
	poison := [][]byte{frame(protowire.AppendVarint(protowire.AppendTag(nil, 4, protowire.VarintType), 1))}
	produceValues(t, broker.Brokers, env.topic, values, poison)
	sink, stop := startSink(t, text)
	env.waitRows(t, n, 2*time.Minute)
	waitRejected(t, sink, stop, 1)
	truth := readTopic(t, broker.Brokers, env.topic, partitions)
	byID := byOffset(truth, events)
	letters := readTopic(t, broker.Brokers, dlq, partitions)
	if len(letters) != 1 {
		t.Errorf("%d dead letters, want 1", len(letters))
	}
	for _, l := range letters {
		if h := decodeHeaders(t, l.Headers); h["pqsink.reason"] != "decode" {
			t.Errorf("dead letter %s: reason %q, error %q; want decode", l.Key, h["pqsink.reason"], h["pqsink.error"])
		}
	}

	dir := strings.TrimPrefix(env.warehouse, "file://")
	files, err := filepath.Glob(filepath.Join(dir, "kafka", env.topic, "data", "*", "*", "*", "*.parquet"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no files in three partition folders (%v)", err)
	}
	folders := regexp.MustCompile(`/data/id_bucket=([01])/country=([^/]*)/payload_nested_level=([^/]+)/[^/]+$`)
	db := duckdb.Start(t)
	res := db.Query(t, `SELECT filename, "_kafka"."partition" AS p, "_kafka"."offset" AS o, id, country, payload.nested.level AS level
		FROM read_parquet(`+duckdb.Quote(filepath.Join(dir, "kafka", env.topic, "data", "**", "*.parquet"))+`, filename = true, hive_partitioning = false)`)
	bucket := func(id int64) string {
		return fmt.Sprint(iceberg.BucketTransform{NumBuckets: 2}.Apply(iceberg.Optional[iceberg.Literal]{Val: iceberg.NewLiteral(id), Valid: true}).Val.Any())
	}
	const null = "__HIVE_DEFAULT_PARTITION__"
	seen := map[string]bool{}
	for i := range res.Rows {
		key := fmt.Sprintf("%v/%v", res.Value(i, "p"), res.Value(i, "o"))
		e, ok := byID[key]
		switch {
		case !ok:
			t.Errorf("the files hold %s, which is not a good record", key)
			continue
		case seen[key]:
			t.Errorf("%s is in the files twice", key)
		}
		seen[key] = true
		m := folders.FindStringSubmatch(filepath.ToSlash(fmt.Sprint(res.Value(i, "filename"))))
		if m == nil {
			t.Errorf("%s: file %s is not in three partition folders", key, res.Value(i, "filename"))
			continue
		}
		country, level := "", null
		if e.country != "" {
			country = e.country
		}
		if e.level >= 0 {
			level = fmt.Sprint(e.level)
		}
		if want := []string{bucket(e.id), country, level}; strings.Join(m[1:], "|") != strings.Join(want, "|") {
			t.Errorf("%s (%+v) is in folders %q, want %q", key, e, m[1:], want)
		}
		// The file's columns hold the values of its folders.
		gotLevel := fmt.Sprint(res.Value(i, "level"))
		if gotLevel == "<nil>" {
			gotLevel = null
		}
		gotCountry := fmt.Sprint(res.Value(i, "country"))
		if gotCountry != m[2] || gotLevel != m[3] {
			t.Errorf("%s: columns country %q level %q in folders %q", key, gotCountry, gotLevel, m[1:])
		}
	}
	if len(seen) != n {
		t.Errorf("the files hold %d distinct records, want %d", len(seen), n)
	}

	tbl := env.load(t)
	all, err := tbl.Scan().PlanFiles(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// iceberg-go reads every file, those of the empty string's folder
	// (country=) too: it refused the %EMPTY of earlier versions as a
	// location ("invalid URL escape").
	if got := scanRowIDs(t, tbl.Scan(itable.WithSelectedFields("_kafka.partition", "_kafka.offset"))); len(got) != len(byID) {
		t.Errorf("the whole table's scan returned %d rows, want %d", len(got), len(byID))
	}
	// No filter on country: iceberg-go 0.7.0 prunes every manifest whose
	// partition summary has the empty string as its lower bound (it reads
	// the bound as absent, all nulls), so a scan filtered on country
	// misses the files of every commit that holds an empty country.
	checkFilteredScans(t, tbl, len(all), byID, []string{"id", "country"}, []scanCase[protoEvent]{
		{"level = 0", iceberg.EqualTo(iceberg.Reference("payload.nested.level"), int32(0)), func(e protoEvent) bool { return e.level == 0 }},
		{"level is null", iceberg.IsNull(iceberg.Reference("payload.nested.level")), func(e protoEvent) bool { return e.level < 0 }},
	})
}
