package test

import (
	"bytes"
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	kafkatest "github.com/pqsink/pqsink/internal/testutil/kafka"
	"github.com/pqsink/pqsink/internal/testutil/minio"
	"github.com/pqsink/pqsink/internal/testutil/protoref"
	"github.com/pqsink/pqsink/objstore"
	pqreader "github.com/pqsink/pqsink/reader"
	"github.com/pqsink/pqsink/schema/protobuf"
)

// The Protobuf schemas of the registry test: v1 is all_types.proto, which
// imports pqsink/test/inner.proto (a reference to the subject inner); v2
// adds a field.
const (
	protoIDv1 = 21
	protoIDv2 = 22
)

// allTypesV2 writes all_types.proto with the field `string added = 44;`
// into a directory of its own, and returns its text and the message.
func allTypesV2(t *testing.T) (string, protoreflect.MessageDescriptor) {
	t.Helper()
	file, imports := protoref.AllTypesFile(t)
	v1, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	v2 := strings.Replace(string(v1), "  uint32 big = 1000;\n", "  uint32 big = 1000;\n  string added = 44;\n", 1)
	if v2 == string(v1) {
		t.Fatal("all_types.proto has no field big to add a field after")
	}
	path := filepath.Join(t.TempDir(), "all_types.proto")
	if err := os.WriteFile(path, []byte(v2), 0o644); err != nil {
		t.Fatal(err)
	}
	md, err := protobuf.LoadFile(context.Background(), path, imports, protoref.AllTypesMessage)
	if err != nil {
		t.Fatal(err)
	}
	return v2, md
}

// TestSinkProtobufRegistry: format.type protobuf with registry, into
// MinIO. The topic's schema gains a field mid-stream (v1, then v2, then v1
// again from producers not upgraded yet), the registry is down when v2
// first appears, and the schema's import is a registry reference. Every
// good record lands once, with protoc --decode's view (v1) or Go's
// protobuf library's (v2, which protoc's v1 schema cannot show); files
// rotate with reason schema at each change of schema id; bad wire bytes
// (an unknown schema id, a header without the magic byte, message indexes
// naming a recursive message, a body that does not decode) go to the dead
// letters; the footers carry schema id and message indexes.
func TestSinkProtobufRegistry(t *testing.T) {
	const partitions = 2
	topic, dlq, target := "proto-registry", "proto-registry.dlq", "proto-registry.replayed"
	broker := kafkatest.Start(t, partitions, topic, dlq, target)

	v1md := protoref.AllTypes(t)
	v2text, v2md := allTypesV2(t)
	file, imports := protoref.AllTypesFile(t)
	v1text, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	inner, err := os.ReadFile(filepath.Join(imports[0], "pqsink", "test", "inner.proto"))
	if err != nil {
		t.Fatal(err)
	}
	refs := []map[string]any{{"name": "pqsink/test/inner.proto", "subject": "inner", "version": 1}}
	reg := &testRegistry{schemas: map[int]string{}, gets: map[int]int{}, failID: protoIDv2, failures: 8, answers: map[string]any{
		fmt.Sprintf("/schemas/ids/%d", protoIDv1): map[string]any{"schemaType": "PROTOBUF", "schema": string(v1text), "references": refs},
		fmt.Sprintf("/schemas/ids/%d", protoIDv2): map[string]any{"schemaType": "PROTOBUF", "schema": v2text, "references": refs},
		"/subjects/inner/versions/1":              map[string]any{"subject": "inner", "version": 1, "id": 20, "schemaType": "PROTOBUF", "schema": string(inner)},
	}}
	srv := httptest.NewServer(reg)
	defer srv.Close()

	// The stream, with Confluent framing: 20 v1, 20 v2, 10 v1.
	msgs, names := protoref.Messages(t)
	names = protoref.CanonicalNames(names)
	version := map[string]int{} // by key
	var values [][]byte
	add := func(v int) {
		md, id := v1md, uint32(protoIDv1)
		text := msgs[names[len(values)%len(names)]]
		if v == 2 {
			md, id = v2md, protoIDv2
			text = append(append([]byte{}, text...), fmt.Sprintf("\nadded: \"v2-%d\"\n", len(values))...)
		}
		body, err := proto.MarshalOptions{Deterministic: true}.Marshal(protoref.FromText(t, md, text))
		if err != nil {
			t.Fatal(err)
		}
		version[fmt.Sprintf("k%04d", len(values))] = v
		values = append(values, append(protobuf.AppendWire(nil, id, []int{0}), body...))
	}
	for range 20 {
		add(1)
	}
	for range 20 {
		add(2)
	}
	for range 10 {
		add(1)
	}
	good := values[0][6:]
	poison := [][]byte{
		append(protobuf.AppendWire(nil, 999, nil), good...),             // unknown schema id
		append([]byte{1}, values[0][1:]...),                             // no magic byte
		append(protobuf.AppendWire(nil, protoIDv1, []int{1}), 0x0a, 0),  // Recursive: no Parquet schema
		append(protobuf.AppendWire(nil, protoIDv1, nil), 0x72, 1, 0xff), // a string that is not UTF-8
	}
	produceValues(t, broker.Brokers, topic, values, poison)
	truth := readTopic(t, broker.Brokers, topic, partitions)

	mio := minio.Start(t)
	bucket := mio.NewBucket(t)
	cfg := sinkConfig{brokers: broker.Brokers, group: "proto-registry", topic: topic, format: "protobuf", envelope: true,
		records: 100000, interval: "10m", path: "{topic}/{topic}+{partition}+{first_offset}.parquet",
		storeURL: fmt.Sprintf("s3://%s/archive", bucket), s3: &s3Target{endpoint: mio.Endpoint, region: mio.Region, access: mio.AccessKey, secret: mio.SecretKey},
		extra: "dead_letter:\n  topic: " + dlq + "\n"}
	text := strings.Replace(cfg.yaml(t), "format:\n  type: protobuf\n",
		fmt.Sprintf("format:\n  type: protobuf\n  registry: {url: %q, timeout: 2s}\n", srv.URL), 1)
	ctx := context.Background()
	store, err := objstore.Open(ctx, cfg.storeURL+"?endpoint="+mio.Endpoint+"&path_style=true&region="+mio.Region,
		objstore.StaticCredentials(mio.AccessKey, mio.SecretKey, ""))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	sink, stop := startSink(t, text)
	waitConsumed(t, sink, int64(len(truth)))
	stop()

	// A file ends at each change of schema id in a partition.
	byPart := map[int][]produced{}
	for _, p := range truth {
		if !strings.HasPrefix(string(p.Key), "poison-") {
			byPart[p.Partition] = append(byPart[p.Partition], p)
		}
	}
	var changes int64
	for _, ps := range byPart {
		sort.Slice(ps, func(i, j int) bool { return ps[i].Offset < ps[j].Offset })
		for i := 1; i < len(ps); i++ {
			if version[string(ps[i].Key)] != version[string(ps[i-1].Key)] {
				changes++
			}
		}
	}
	st := sink.Stats().Snapshot()
	if got := st.Files["schema"]; got != changes || changes < 2 {
		t.Errorf("files rotated for reason schema: %d, want %d (files %v)", got, changes, st.Files)
	}
	if st.RecordsUploaded != int64(len(values)) || st.Rejects[[2]string{"decode", "dead_letter"}] != 3 || st.Rejects[[2]string{"schema", "dead_letter"}] != 1 {
		t.Errorf("stats: uploaded %d, rejects %v", st.RecordsUploaded, st.Rejects)
	}
	reg.mu.Lock()
	if n := reg.gets[protoIDv1]; n > partitions {
		t.Errorf("registry asked %d times for schema %d: the compiled schema is cached", n, protoIDv1)
	}
	if n := reg.gets[protoIDv2]; n <= 8 {
		t.Errorf("registry asked %d times for schema %d: the outage was not seen", n, protoIDv2)
	}
	reg.mu.Unlock()
	letters := readTopic(t, broker.Brokers, dlq, partitions)
	if len(letters) != len(poison) {
		t.Errorf("%d dead letters, want %d", len(letters), len(poison))
	}

	files := download(t, store, t.TempDir())
	checkFileRanges(t, files)
	ids := map[string]int{}
	for _, f := range files {
		kv := footerKeyValues(t, f.local)
		ids[kv["pqsink.protobuf.schema_id"]]++
		if kv["pqsink.protobuf.message_indexes"] != "0" {
			t.Errorf("%s: message indexes %q in the footer, want 0", f.key, kv["pqsink.protobuf.message_indexes"])
		}
	}
	if ids[fmt.Sprint(protoIDv1)] == 0 || ids[fmt.Sprint(protoIDv2)] == 0 || len(ids) != 2 {
		t.Errorf("files by schema id in their footers: %v", ids)
	}
	checkProtobufRows(t, files, truth, func(p produced) []byte {
		_, _, body, err := protobuf.SplitWire(p.Value, nil)
		if err != nil {
			t.Fatal(err)
		}
		if version[string(p.Key)] == 1 {
			return protoref.Expect(t, protoref.FromText(t, v1md, protoref.Decode(t, body)))
		}
		m := dynamicpb.NewMessage(v2md)
		if err := proto.Unmarshal(body, m); err != nil {
			t.Fatal(err)
		}
		return protoref.Expect(t, m)
	})

	// Replay writes every record back byte for byte: Confluent's header
	// from the footer (schema id, message indexes), the message as Go's
	// protobuf library writes it deterministically, which is how the test
	// produced them.
	replayProtobuf(t, text, cfg.storeURL, broker.Brokers, target, partitions, truth, v2md, func(produced) bool { return true })
}

// footerKeyValues returns the key-value metadata of a Parquet file.
func footerKeyValues(t *testing.T, path string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := pqreader.Open(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, kv := range f.Metadata().KeyValueMetadata {
		if kv.Value != nil {
			out[kv.Key] = *kv.Value
		}
	}
	return out
}
