package config

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// example is the config users' scripts rely on; it must keep loading.
const example = `kafka:
  brokers: [127.0.0.1:9092]
  group: pqsink-archive
  topics: [events]            # or topic_regex: '^events\..*'
  start: earliest             # when the group has no committed offset: earliest | latest
  # sasl: {mechanism: SCRAM-SHA-512, username: ..., password: ${KAFKA_PASSWORD}}   tls: {ca_file: ..., cert_file: ..., key_file: ...}
store:
  url: s3://archive/raw       # or file:///var/lib/pqsink/out
  endpoint: http://127.0.0.1:9000
  region: us-east-1
  path_style: true
  access_key: ${S3_ACCESS_KEY}
  secret_key: ${S3_SECRET_KEY}
format:
  type: json                  # json | variant   (avro comes later)
  schema_file: events.schema  # message syntax, for json; variant needs none
envelope: true                # _kafka group: topic, partition, offset, timestamp, key, headers
path: "{topic}/dt={record_time:2006-01-02}/hr={record_time:15}/{topic}+{partition}+{first_offset}.parquet"
rotate:
  records: 1000000
  bytes: 256MiB
  interval: 10m
parquet:
  codec: zstd
  row_group_bytes: 64MiB
memory:
  limit: 512MiB
metrics:
  listen: 127.0.0.1:9102
`

// envOf returns a lookup function over a fixed set of variables.
func envOf(vars map[string]string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		v, ok := vars[name]
		return v, ok
	}
}

// writeFiles creates files (with placeholder content) in dir.
func writeFiles(t *testing.T, dir string, names ...string) {
	t.Helper()
	for _, n := range names {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("x\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

func TestLoadExample(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, "events.schema")
	path := filepath.Join(dir, "pqsink.yaml")
	if err := os.WriteFile(path, []byte(example), 0o600); err != nil {
		t.Fatal(err)
	}
	env := envOf(map[string]string{"S3_ACCESS_KEY": "minioadmin", "S3_SECRET_KEY": "minio-secret"})
	got, err := Load(path, env)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	want := &Config{
		Kafka: Kafka{
			Brokers:           []string{"127.0.0.1:9092"},
			Group:             "pqsink-archive",
			Topics:            []string{"events"},
			Start:             "earliest",
			ClientID:          "pqsink",
			Fetch:             Fetch{MinBytes: 1, MaxBytes: 16 << 20, MaxWait: 500 * time.Millisecond},
			SessionTimeout:    30 * time.Second,
			HeartbeatInterval: 3 * time.Second,
			RebalanceTimeout:  30 * time.Second,
			CommitTimeout:     30 * time.Second,
			TopicRefresh:      30 * time.Second,
		},
		Store: Store{
			URL:               "s3://archive/raw",
			Endpoint:          "http://127.0.0.1:9000",
			Region:            "us-east-1",
			PathStyle:         true,
			AccessKey:         "minioadmin",
			SecretKey:         "minio-secret",
			PartSize:          8 << 20,
			ConditionalWrites: true,
			StaleUploadAge:    24 * time.Hour,
			MaxRetries:        10,
			MaxRetryWait:      20 * time.Second,
		},
		Format: Format{
			Type:        "json",
			SchemaFile:  filepath.Join(dir, "events.schema"),
			Column:      "payload",
			Shred:       "auto",
			ShredSample: 10000,
		},
		Envelope:     true,
		Path:         "{topic}/dt={record_time:2006-01-02}/hr={record_time:15}/{topic}+{partition}+{first_offset}.parquet",
		Timezone:     time.UTC,
		TimezoneName: "UTC",
		Rotate:       Rotate{Records: 1000000, Bytes: 256 << 20, Interval: 10 * time.Minute},
		Parquet: Parquet{
			Codec: "zstd", RowGroupBytes: 64 << 20, PageBytes: 1 << 20, PageVersion: 1,
			Dictionary: true, PageIndex: true, Checksums: true, StatsTruncate: 64,
		},
		Memory:          Memory{Limit: 512 << 20},
		Metrics:         Metrics{Listen: "127.0.0.1:9102", StallTimeout: 2 * time.Minute},
		Log:             Log{Format: "text", Level: "info"},
		Shutdown:        "finish",
		ShutdownTimeout: 30 * time.Second,
		MaxRecordBytes:  64 << 20,
		Errors:          "fail",
		Dir:             dir,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Load(example):\n got %+v\nwant %+v", got, want)
	}
	if got.Store.SecretKey.Value() != "minio-secret" {
		t.Errorf("SecretKey.Value() = %q", got.Store.SecretKey.Value())
	}

	// The same file without the variables fails, naming both of them.
	_, err = Load(path, envOf(nil))
	for _, s := range []string{
		"config line 12: store.access_key: environment variable S3_ACCESS_KEY is not set",
		"config line 13: store.secret_key: environment variable S3_SECRET_KEY is not set",
	} {
		if err == nil || !strings.Contains(err.Error(), s) {
			t.Errorf("Load without env: error %v, want it to contain %q", err, s)
		}
	}
}

// TestDefaults spells out every default, as docs/configuration.md and the field
// comments state them.
func TestDefaults(t *testing.T) {
	got, err := Parse([]byte(`
kafka: {brokers: [b:9092], group: g, topics: [t]}
store: {url: "file:///var/lib/pqsink/out"}
format: {type: variant}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	cwd, _ := os.Getwd()
	want := &Config{
		Kafka: Kafka{
			Brokers: []string{"b:9092"}, Group: "g", Topics: []string{"t"},
			Start:             "earliest",
			ClientID:          "pqsink",
			Fetch:             Fetch{MinBytes: 1, MaxBytes: 16 << 20, MaxWait: 500 * time.Millisecond},
			SessionTimeout:    30 * time.Second,
			HeartbeatInterval: 3 * time.Second,
			RebalanceTimeout:  30 * time.Second,
			CommitTimeout:     30 * time.Second,
			TopicRefresh:      30 * time.Second,
		},
		Store: Store{
			URL:               "file:///var/lib/pqsink/out",
			PartSize:          8 << 20,
			ConditionalWrites: true,
			StaleUploadAge:    24 * time.Hour,
			MaxRetries:        10,
			MaxRetryWait:      20 * time.Second,
		},
		Format:       Format{Type: "variant", Column: "payload", Shred: "auto", ShredSample: 10000},
		Envelope:     true,
		Path:         "{topic}/{topic}+{partition}+{first_offset}.parquet",
		Timezone:     time.UTC,
		TimezoneName: "UTC",
		Rotate:       Rotate{Records: 1000000, Bytes: 256 << 20, Interval: 10 * time.Minute, Schedule: 0},
		Parquet: Parquet{
			Codec:         "zstd",
			RowGroupBytes: 64 << 20,
			PageBytes:     1 << 20,
			PageVersion:   1,
			Dictionary:    true,
			PageIndex:     true,
			Checksums:     true,
			StatsTruncate: 64,
		},
		Memory:          Memory{Limit: 512 << 20},
		Metrics:         Metrics{StallTimeout: 2 * time.Minute},
		Log:             Log{Format: "text", Level: "info"},
		Shutdown:        "finish",
		ShutdownTimeout: 30 * time.Second,
		MaxRecordBytes:  64 << 20,
		Errors:          "fail",
		Dir:             cwd,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("defaults:\n got %+v\nwant %+v", got, want)
	}
	if got.Kafka.SASL != nil || got.Kafka.TLS != nil {
		t.Errorf("SASL, TLS = %v, %v; want nil when absent", got.Kafka.SASL, got.Kafka.TLS)
	}
}

// TestEverySetting sets every key to a non-default value.
func TestEverySetting(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, "ca.pem", "cert.pem", "key.pem", "events.schema")
	path := filepath.Join(dir, "c.yaml")
	text := `
kafka:
  brokers: "k1:9092, k2:9093"
  group: g
  topic_regex: '^events\..*$'
  start: LATEST
  client_id: me
  instance_id: pod-0
  sasl: {mechanism: scram-sha-256, username: u, password: p}
  tls: {ca_file: ca.pem, cert_file: ./cert.pem, key_file: KEY, insecure_skip_verify: true, server_name: kafka.local}
  fetch: {min_bytes: 1KiB, max_bytes: 1MB, max_wait: 1s}
  session_timeout: 45s
  heartbeat_interval: 5s
  rebalance_timeout: 1m
  commit_timeout: 10s
store:
  url: s3://bucket
  endpoint: https://s3.example.com
  region: eu-west-1
  path_style: false
  access_key: ak
  secret_key: sk
  session_token: tok
  part_size: 16MiB
  conditional_writes: false
  sse: aws:kms
  sse_kms_key_id: key-1
  stale_upload_age: 2h
  max_retries: 0
  max_retry_wait: 1m
format: {type: json, schema_file: events.schema, ignore_unknown_fields: true}
envelope: false
path: "{topic}/{partition}/{first_offset}.parquet"
time_field: meta.created_at
timezone: Europe/Berlin
rotate: {records: 0, bytes: 0, interval: 0, schedule: 1h}
parquet:
  codec: ZSTD:3
  row_group_bytes: 32MiB
  page_bytes: 512KiB
  page_version: 2
  dictionary: false
  page_index: false
  checksums: false
  bloom_filters: [user_id, "user.email:0.001"]
  stats_truncate: 0
memory: {limit: 1GiB}
metrics: {listen: ":9102", stall_timeout: 90s}
log: {format: json, level: debug}
shutdown: abandon
shutdown_timeout: 1m
max_record_bytes: 1_048_576
errors: skip
`
	if err := os.WriteFile(path, []byte(strings.Replace(text, "KEY", filepath.Join(dir, "key.pem"), 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Load(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	berlin, _ := time.LoadLocation("Europe/Berlin")
	want := &Config{
		Kafka: Kafka{
			Brokers: []string{"k1:9092", "k2:9093"}, Group: "g", TopicRegex: `^events\..*$`,
			Start: "latest", ClientID: "me", InstanceID: "pod-0",
			SASL: &SASL{Mechanism: "SCRAM-SHA-256", Username: "u", Password: "p"},
			TLS: &TLS{
				CAFile: filepath.Join(dir, "ca.pem"), CertFile: filepath.Join(dir, "cert.pem"), KeyFile: filepath.Join(dir, "key.pem"),
				InsecureSkipVerify: true, ServerName: "kafka.local",
			},
			Fetch:             Fetch{MinBytes: 1024, MaxBytes: 1000000, MaxWait: time.Second},
			SessionTimeout:    45 * time.Second,
			HeartbeatInterval: 5 * time.Second,
			RebalanceTimeout:  time.Minute,
			CommitTimeout:     10 * time.Second,
			TopicRefresh:      30 * time.Second,
		},
		Store: Store{
			URL: "s3://bucket", Endpoint: "https://s3.example.com", Region: "eu-west-1",
			AccessKey: "ak", SecretKey: "sk", SessionToken: "tok", PartSize: 16 << 20,
			SSE: "aws:kms", SSEKMSKeyID: "key-1", StaleUploadAge: 2 * time.Hour, MaxRetryWait: time.Minute,
		},
		Format: Format{
			Type: "json", SchemaFile: filepath.Join(dir, "events.schema"), IgnoreUnknownFields: true,
			Column: "payload", Shred: "auto", ShredSample: 10000,
		},
		Path:         "{topic}/{partition}/{first_offset}.parquet",
		TimeField:    "meta.created_at",
		Timezone:     berlin,
		TimezoneName: "Europe/Berlin",
		Rotate:       Rotate{Schedule: time.Hour},
		Parquet: Parquet{
			Codec: "zstd:3", RowGroupBytes: 32 << 20, PageBytes: 512 << 10, PageVersion: 2,
			BloomFilters: []string{"user_id", "user.email:0.001"},
		},
		Memory:          Memory{Limit: 1 << 30},
		Metrics:         Metrics{Listen: ":9102", StallTimeout: 90 * time.Second},
		Log:             Log{Format: "json", Level: "debug"},
		Shutdown:        "abandon",
		ShutdownTimeout: time.Minute,
		MaxRecordBytes:  1 << 20,
		Errors:          "skip",
		Dir:             dir,
	}
	if !reflect.DeepEqual(c, want) {
		t.Errorf("Load:\n got %+v\nwant %+v", c, want)
	}
	if !reflect.DeepEqual(c.Kafka.SASL, want.Kafka.SASL) || !reflect.DeepEqual(c.Kafka.TLS, want.Kafka.TLS) {
		t.Errorf("SASL, TLS = %+v, %+v", *c.Kafka.SASL, *c.Kafka.TLS)
	}
}

func TestVariantSettings(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, "fields.txt")
	path := filepath.Join(dir, "c.yaml")
	text := `
kafka:
  brokers: [b:9092]
  group: g
  topics: t1,t2
store: {url: "file:///out"}
format: {type: variant, column: doc, shred: fields.txt, shred_sample: 500}
`
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Load(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := Format{Type: "variant", Column: "doc", Shred: filepath.Join(dir, "fields.txt"), ShredSample: 500}
	if c.Format != want {
		t.Errorf("Format = %+v, want %+v", c.Format, want)
	}
	if !reflect.DeepEqual(c.Kafka.Topics, []string{"t1", "t2"}) {
		t.Errorf("Topics = %q", c.Kafka.Topics)
	}
	for _, shred := range []string{"none", "auto", "None"} {
		c, err := Parse([]byte(strings.Replace(text, "fields.txt", shred, 1)), nil)
		if err != nil || c.Format.Shred != strings.ToLower(shred) {
			t.Errorf("shred: %s gave %v, %v", shred, c, err)
		}
	}
}

// testDir holds files that the invalid cases refer to by ${DIR}.
func testDir(t *testing.T) string {
	dir := t.TempDir()
	writeFiles(t, dir, "ca.pem", "cert.pem", "key.pem", "events.schema")
	if err := os.Mkdir(filepath.Join(dir, "subdir"), 0o700); err != nil {
		t.Fatal(err)
	}
	return dir
}

const (
	kafkaOK  = "kafka: {brokers: [b:9092], group: g, topics: [t]}\n"
	storeOK  = "store: {url: 'file:///tmp/out'}\n"
	formatOK = "format: {type: variant}\n"
	base     = kafkaOK + storeOK + formatOK
)

func TestInvalid(t *testing.T) {
	dir := testDir(t)
	env := envOf(map[string]string{"DIR": dir, "EMPTY": "", "N": "many"})
	for _, tc := range []struct {
		name, text string
		want       []string // substrings of the error, each
	}{
		// Structure.
		{"empty", "", []string{"config is empty"}},
		{"comments only", "# nothing\n", []string{"config is empty"}},
		{"not a mapping", "[a, b]\n", []string{"config line 1: want a mapping of keys, got a list"}},
		{"syntax", "kafka: [b\n", []string{"config line 1: did not find expected ',' or ']'"}},
		{"two documents", base + "---\n" + base, []string{"config line 4: a second YAML document"}},
		{"unknown top key", base + "rotation: {}\n", []string{"config line 4: rotation: unknown key (allowed: kafka, store, format,", "did you mean rotate?"}},
		{"unknown nested key", "kafka: {brokers: [b:9092], group: g, topicz: [t]}\n" + storeOK + formatOK,
			[]string{"config line 1: kafka.topicz: unknown key (allowed: brokers, group, topics, topic_regex,", "did you mean topics?"}},
		{"unknown deep key", base + "parquet: {codec: zstd}\nkafka2: 1\n", []string{"kafka2: unknown key"}},
		{"unknown fetch key", "kafka: {brokers: [b:9092], group: g, topics: [t], fetch: {max_bites: 1}}\n" + storeOK + formatOK,
			[]string{"kafka.fetch.max_bites: unknown key (allowed: min_bytes, max_bytes, max_wait); did you mean max_bytes?"}},
		{"duplicate key", base + "rotate:\n  records: 1\n  records: 2\n", []string{"config line 6: rotate.records: duplicate key (first set on line 5)"}},
		{"duplicate section", base + "store: {url: 'file:///x'}\n", []string{"config line 4: store: duplicate key (first set on line 2)"}},
		{"merge key", base + "x: &x {records: 1}\n", []string{"x: unknown key"}},
		{"merge key used", base + "rotate:\n  <<: {records: 1}\n", []string{"rotate.<<: merge keys (<<) are not supported"}},
		{"section not a mapping", base + "rotate: 5\n", []string{"config line 4: rotate: want a mapping of keys, got a number"}},

		// Types.
		{"records not a number", base + "rotate: {records: many}\n", []string{`config line 4: rotate.records: want an integer, got "many"`}},
		{"records from env", base + "rotate: {records: '${N}'}\n", []string{`rotate.records: want an integer, got "many"`}},
		{"records float", base + "rotate: {records: 1.5}\n", []string{`rotate.records: want an integer, got "1.5"`}},
		{"records a list", base + "rotate: {records: [1]}\n", []string{`rotate.records: want an integer, got a list`}},
		{"bool", base + "envelope: yes\n", []string{`envelope: want true or false, got "yes"`}},
		{"bool mapping", base + "envelope: {a: 1}\n", []string{`envelope: want true or false, got a mapping`}},
		{"duration", base + "rotate: {interval: 10}\n", []string{`rotate.interval: want a duration like 10m, 30s or 500ms, got "10" (a unit is required)`}},
		{"duration word", base + "shutdown_timeout: soon\n", []string{`shutdown_timeout: want a duration like 10m, 30s or 500ms, got "soon"`}},
		{"size", base + "memory: {limit: lots}\n", []string{`memory.limit: want a size like 256MiB, 64MB or 1048576, got "lots"`}},
		{"size negative", base + "max_record_bytes: -1\n", []string{`max_record_bytes: want a size`}},
		{"string gets list", "kafka: {brokers: [b:9092], group: [g], topics: [t]}\n" + storeOK + formatOK, []string{"kafka.group: want a string, got a list"}},
		{"list gets mapping", "kafka: {brokers: {b: 1}, group: g, topics: [t]}\n" + storeOK + formatOK, []string{"kafka.brokers: want a list of strings, got a mapping"}},
		{"list item empty", "kafka: {brokers: [b:9092, ''], group: g, topics: [t]}\n" + storeOK + formatOK, []string{"kafka.brokers[1]: must not be empty"}},
		{"list item null", "kafka: {brokers: [b:9092, ~], group: g, topics: [t]}\n" + storeOK + formatOK, []string{"kafka.brokers[1]: must not be empty"}},
		{"list item mapping", "kafka: {brokers: [{a: b}], group: g, topics: [t]}\n" + storeOK + formatOK, []string{"kafka.brokers[0]: want a string, got a mapping"}},
		{"bloom filters string", base + "parquet: {bloom_filters: a}\n", []string{"parquet.bloom_filters: want a list of strings, got a string"}},

		// Required.
		{"no kafka", storeOK + formatOK, []string{"config: kafka.brokers: required", "config: kafka.group: required", "kafka.topics: required: set kafka.topics or kafka.topic_regex"}},
		{"no store", kafkaOK + formatOK, []string{"config: store.url: required"}},
		{"no format", kafkaOK + storeOK, []string{"config: format.type: required"}},
		{"null group", "kafka: {brokers: [b:9092], group: null, topics: [t]}\n" + storeOK + formatOK, []string{"config line 1: kafka.group: required"}},
		{"emptied group", "kafka: {brokers: [b:9092], group: '${EMPTY}', topics: [t]}\n" + storeOK + formatOK, []string{"kafka.group: required, but empty after ${} expansion"}},
		{"empty topics", "kafka: {brokers: [b:9092], group: g, topics: []}\n" + storeOK + formatOK, []string{"kafka.topics: required"}},
		{"schema_file for json", kafkaOK + storeOK + "format: {type: json}\n", []string{"config line 3: format.schema_file: required when format.type is json"}},
		{"sasl parts", "kafka: {brokers: [b:9092], group: g, topics: [t], sasl: {}}\n" + storeOK + formatOK,
			[]string{"kafka.sasl.mechanism: required", "kafka.sasl.username: required", "kafka.sasl.password: required"}},

		// Values.
		{"start", "kafka: {brokers: [b:9092], group: g, topics: [t], start: middle}\n" + storeOK + formatOK, []string{`config line 1: kafka.start: "middle" is not one of earliest, latest`}},
		{"broker without port", "kafka: {brokers: [kafka], group: g, topics: [t]}\n" + storeOK + formatOK, []string{`kafka.brokers: broker "kafka": want host:port`}},
		{"broker bad port", "kafka: {brokers: ['b:99999'], group: g, topics: [t]}\n" + storeOK + formatOK, []string{`port "99999" is not a number from 1 to 65535`}},
		{"topics and regex", "kafka: {brokers: [b:9092], group: g, topics: [t], topic_regex: x}\n" + storeOK + formatOK, []string{"kafka.topic_regex: set either kafka.topics or kafka.topic_regex, not both"}},
		{"regex", "kafka: {brokers: [b:9092], group: g, topic_regex: '(x'}\n" + storeOK + formatOK, []string{`kafka.topic_regex: "(x" does not compile: missing closing )`}},
		{"topic name", "kafka: {brokers: [b:9092], group: g, topics: ['a b']}\n" + storeOK + formatOK, []string{`kafka.topics: "a b" is not a Kafka topic name`}},
		{"topic twice", "kafka: {brokers: [b:9092], group: g, topics: [a, a]}\n" + storeOK + formatOK, []string{`kafka.topics: "a" is listed twice`}},
		{"mechanism", "kafka: {brokers: [b:9092], group: g, topics: [t], sasl: {mechanism: GSSAPI, username: u, password: p}}\n" + storeOK + formatOK,
			[]string{`kafka.sasl.mechanism: "GSSAPI" is not one of PLAIN, SCRAM-SHA-256, SCRAM-SHA-512`}},
		{"tls file missing", "kafka: {brokers: [b:9092], group: g, topics: [t], tls: {ca_file: nope.pem}}\n" + storeOK + formatOK, []string{"kafka.tls.ca_file: ", "nope.pem\" does not exist"}},
		{"tls file a dir", "kafka: {brokers: [b:9092], group: g, topics: [t], tls: {ca_file: '${DIR}/subdir'}}\n" + storeOK + formatOK, []string{"kafka.tls.ca_file: ", "is a directory"}},
		{"tls cert without key", "kafka: {brokers: [b:9092], group: g, topics: [t], tls: {cert_file: '${DIR}/cert.pem'}}\n" + storeOK + formatOK, []string{"kafka.tls.cert_file: set kafka.tls.key_file too"}},
		{"tls key without cert", "kafka: {brokers: [b:9092], group: g, topics: [t], tls: {key_file: '${DIR}/key.pem'}}\n" + storeOK + formatOK, []string{"kafka.tls.key_file: set kafka.tls.cert_file too"}},
		{"fetch max under min", "kafka: {brokers: [b:9092], group: g, topics: [t], fetch: {min_bytes: 2MiB, max_bytes: 1MiB}}\n" + storeOK + formatOK, []string{"kafka.fetch.max_bytes: 1MiB is less than kafka.fetch.min_bytes (2MiB)"}},
		{"fetch min zero", "kafka: {brokers: [b:9092], group: g, topics: [t], fetch: {min_bytes: 0}}\n" + storeOK + formatOK, []string{"kafka.fetch.min_bytes: must be positive, got 0"}},
		{"heartbeat", "kafka: {brokers: [b:9092], group: g, topics: [t], session_timeout: 2s}\n" + storeOK + formatOK, []string{"kafka.session_timeout: kafka.heartbeat_interval (3s) must be less than kafka.session_timeout (2s)"}},
		{"session zero", "kafka: {brokers: [b:9092], group: g, topics: [t], session_timeout: 0s}\n" + storeOK + formatOK, []string{"kafka.session_timeout: must be positive"}},
		{"url scheme", kafkaOK + "store: {url: 'az://b'}\n" + formatOK, []string{`store.url: scheme "az" is not one of s3, gs, azblob, abfss, file`}},
		{"azblob no container", kafkaOK + "store: {url: 'azblob:///prefix'}\n" + formatOK, []string{"store.url: want azblob://container[/prefix]: the container is missing"}},
		{"azblob port", kafkaOK + "store: {url: 'azblob://c:10000/x'}\n" + formatOK, []string{"store.url: want azblob://container[/prefix]: a container has no port"}},
		{"azblob user", kafkaOK + "store: {url: 'azblob://key:hunter2@c/x'}\n" + formatOK, []string{"store.url: must not contain credentials"}},
		{"azblob dotdot", kafkaOK + "store: {url: 'azblob://c/x/../y'}\n" + formatOK, []string{`store.url: the prefix must not contain empty or ".." segments`}},
		{"abfss no container", kafkaOK + "store: {url: 'abfss://acct.dfs.core.windows.net/x'}\n" + formatOK, []string{"store.url: want abfss://container@account.dfs.core.windows.net[/prefix]: the container goes before the @"}},
		{"abfss password", kafkaOK + "store: {url: 'abfss://c:hunter2@acct.dfs.core.windows.net/x'}\n" + formatOK, []string{"store.url: want abfss://container@account.dfs.core.windows.net[/prefix]: the container goes before the @"}},
		{"abfss blob host", kafkaOK + "store: {url: 'abfss://c@acct.blob.core.windows.net/x'}\n" + formatOK, []string{"store.url: want abfss://container@account.dfs.core.windows.net[/prefix]: the host is not an account's dfs endpoint"}},
		{"abfss query", kafkaOK + "store: {url: 'abfss://c@acct.dfs.core.windows.net/x?sig=hunter2'}\n" + formatOK, []string{"store.url: must not have a query or fragment"}},
		{"azblob table", kafkaOK + "store: {url: 'azblob://c'}\n" + formatOK + "table: {format: iceberg, namespace: n, catalog: {type: sql, uri: 'sqlite:///x.db'}}\n",
			[]string{"table: Iceberg tables on Azure need the abfss://CONTAINER@ACCOUNT.dfs.core.windows.net/PREFIX form of store.url"}},
		{"azblob s3 keys", kafkaOK + "store: {url: 'azblob://c', region: eu, access_key: a, secret_key: hunter2, sse: AES256, conditional_writes: false}\n" + formatOK,
			[]string{"store.region: applies only to s3:// stores; an Azure store", "store.access_key: applies only to s3:// stores", "store.secret_key: applies only to s3:// stores",
				"store.sse: applies only to s3:// stores", "store.conditional_writes: applies only to s3:// stores"}},
		{"gs no bucket", kafkaOK + "store: {url: 'gs:///prefix'}\n" + formatOK, []string{"store.url: want gs://bucket[/prefix]: the bucket is missing"}},
		{"gs port", kafkaOK + "store: {url: 'gs://b:4443/x'}\n" + formatOK, []string{"store.url: want gs://bucket[/prefix]: a bucket has no port"}},
		{"gs dotdot", kafkaOK + "store: {url: 'gs://b/x/../y'}\n" + formatOK, []string{`store.url: the prefix must not contain empty or ".." segments`}},
		{"gs s3 keys", kafkaOK + "store: {url: 'gs://b', region: eu, access_key: a, secret_key: hunter2, sse: AES256, conditional_writes: false}\n" + formatOK,
			[]string{"store.region: applies only to s3:// stores", "store.access_key: applies only to s3:// stores", "store.secret_key: applies only to s3:// stores",
				"store.sse: applies only to s3:// stores", "store.conditional_writes: applies only to s3:// stores"}},
		{"url relative file", kafkaOK + "store: {url: 'file://out'}\n" + formatOK, []string{"store.url: a file URL needs an absolute path"}},
		{"url opaque file", kafkaOK + "store: {url: 'file:out'}\n" + formatOK, []string{"store.url: a file URL needs an absolute path"}},
		{"url no bucket", kafkaOK + "store: {url: 's3:///prefix'}\n" + formatOK, []string{"store.url: want s3://bucket[/prefix]: the bucket is missing"}},
		{"url dotdot", kafkaOK + "store: {url: 's3://b/x/../y'}\n" + formatOK, []string{`store.url: the prefix must not contain empty or ".." segments`}},
		{"url port", kafkaOK + "store: {url: 's3://b:9000/x'}\n" + formatOK, []string{"store.url: want s3://bucket[/prefix]: a bucket has no port"}},
		{"row group tiny", base + "parquet: {row_group_bytes: 100}\n", []string{"parquet.row_group_bytes: must be at least 1KiB, got 100"}},
		{"url query", kafkaOK + "store: {url: 's3://b/x?y=1'}\n" + formatOK, []string{"store.url: must not have a query"}},
		{"endpoint", kafkaOK + "store: {url: 's3://b', endpoint: 'localhost:9000'}\n" + formatOK, []string{"store.endpoint: want a URL like http://127.0.0.1:9000"}},
		{"access key alone", kafkaOK + "store: {url: 's3://b', access_key: a}\n" + formatOK, []string{"store.access_key: set store.secret_key too"}},
		{"secret key alone", kafkaOK + "store: {url: 's3://b', secret_key: s}\n" + formatOK, []string{"store.secret_key: set store.access_key too"}},
		{"session token alone", kafkaOK + "store: {url: 's3://b', session_token: s}\n" + formatOK, []string{"store.session_token: needs store.access_key"}},
		{"part size small", kafkaOK + "store: {url: 's3://b', part_size: 1MiB}\n" + formatOK, []string{"store.part_size: must be at least 5MiB, got 1MiB"}},
		{"part size big", kafkaOK + "store: {url: 's3://b', part_size: 6GiB}\n" + formatOK, []string{"store.part_size: must be at most 5GiB, got 6GiB"}},
		{"sse", kafkaOK + "store: {url: 's3://b', sse: kms}\n" + formatOK, []string{`store.sse: "kms" is not one of AES256, aws:kms`}},
		{"kms key without kms", kafkaOK + "store: {url: 's3://b', sse: AES256, sse_kms_key_id: k}\n" + formatOK, []string{"store.sse_kms_key_id: only used with store.sse: aws:kms"}},
		{"max retries", kafkaOK + "store: {url: 's3://b', max_retries: -1}\n" + formatOK, []string{"store.max_retries: must not be negative, got -1"}},
		{"max retry wait", kafkaOK + "store: {url: 's3://b', max_retry_wait: 11m}\n" + formatOK, []string{"store.max_retry_wait"}},
		{"format type", kafkaOK + storeOK + "format: {type: thrift}\n", []string{`format.type: "thrift" is not one of json, variant, avro, protobuf, json_schema`}},
		{"avro without registry", kafkaOK + storeOK + "format: {type: avro}\n", []string{"format.registry: required when format.type is avro"}},
		{"avro registry without url", kafkaOK + storeOK + "format: {type: avro, registry: {username: u}}\n", []string{"format.registry.url: "}},
		{"avro registry url", kafkaOK + storeOK + "format: {type: avro, registry: {url: 'localhost:8081'}}\n", []string{"format.registry.url: want a URL like http://127.0.0.1:8081"}},
		{"avro registry url credentials", kafkaOK + storeOK + "format: {type: avro, registry: {url: 'http://u:pw@r:8081'}}\n", []string{"format.registry.url: must not contain credentials"}},
		{"avro registry unknown key", kafkaOK + storeOK + "format: {type: avro, registry: {url: 'http://r:8081', user: u}}\n", []string{"format.registry.user"}},
		{"avro registry password alone", kafkaOK + storeOK + "format: {type: avro, registry: {url: 'http://r:8081', password: p}}\n", []string{"format.registry.password: set format.registry.username too"}},
		{"avro registry ca missing", kafkaOK + storeOK + "format: {type: avro, registry: {url: 'https://r', ca_file: '${DIR}/nope.pem'}}\n", []string{"format.registry.ca_file: ", "nope.pem\" does not exist"}},
		{"avro registry cache size", kafkaOK + storeOK + "format: {type: avro, registry: {url: 'http://r:8081', cache_size: 0}}\n", []string{"format.registry.cache_size: must be positive, got 0"}},
		{"avro registry timeout", kafkaOK + storeOK + "format: {type: avro, registry: {url: 'http://r:8081', timeout: 0s}}\n", []string{"format.registry.timeout: must be positive"}},
		{"avro compatibility", kafkaOK + storeOK + "format: {type: avro, registry: {url: 'http://r:8081'}, schema_compatibility: forward}\n", []string{`format.schema_compatibility: "forward" is not one of none, backward`}},
		{"avro schema file", kafkaOK + storeOK + "format: {type: avro, registry: {url: 'http://r:8081'}, schema_file: x}\n", []string{"format.schema_file: not used when format.type is avro"}},
		{"avro column", kafkaOK + storeOK + "format: {type: avro, registry: {url: 'http://r:8081'}, column: c}\n", []string{"format.column: not used when format.type is avro"}},
		{"registry for variant", kafkaOK + storeOK + "format: {type: variant, registry: {url: 'http://r:8081'}}\n", []string{"format.registry: not used when format.type is variant"}},
		{"compatibility for json", kafkaOK + storeOK + "format: {type: json, schema_file: '${DIR}/events.schema', schema_compatibility: none}\n", []string{"format.schema_compatibility: not used when format.type is json"}},
		{"avro time field", kafkaOK + storeOK + "format: {type: avro, registry: {url: 'http://r:8081'}}\ntime_field: a..b\n", []string{`time_field: "a..b" is not a dotted field path`}},
		{"schema file for variant", kafkaOK + storeOK + "format: {type: variant, schema_file: x.schema}\n", []string{"config line 3: format.schema_file: not used when format.type is variant"}},
		{"schema file for variant, from env", kafkaOK + storeOK + "format: {type: variant, schema_file: '${DIR}'}\n", []string{"format.schema_file: not used when format.type is variant"}},
		{"ignore unknown for variant", kafkaOK + storeOK + "format: {type: variant, ignore_unknown_fields: true}\n", []string{"format.ignore_unknown_fields: not used when format.type is variant"}},
		{"column for json", kafkaOK + storeOK + "format: {type: json, schema_file: '${DIR}/events.schema', column: c}\n", []string{"format.column: not used when format.type is json"}},
		{"schema file missing", kafkaOK + storeOK + "format: {type: json, schema_file: '${DIR}/nope.schema'}\n", []string{"format.schema_file: ", "nope.schema\" does not exist"}},
		{"column dotted", kafkaOK + storeOK + "format: {type: variant, column: a.b}\n", []string{`format.column: "a.b": a column name cannot contain '.'`}},
		{"column _kafka", kafkaOK + storeOK + "format: {type: variant, column: _kafka}\n", []string{`format.column: "_kafka" is the envelope's column group`}},
		{"shred file missing", kafkaOK + storeOK + "format: {type: variant, shred: '${DIR}/nope.txt'}\n", []string{"format.shred: ", "nope.txt\" does not exist (want auto, none, or the path"}},
		{"shred sample", kafkaOK + storeOK + "format: {type: variant, shred_sample: 0}\n", []string{"format.shred_sample: must be positive, got 0"}},
		{"path unknown placeholder", base + "path: '{topic}/{partition}/{first_offset}/{hour}'\n", []string{"path: ", "unknown placeholder {hour}"}},
		{"path lacks partition", base + "path: '{topic}/{first_offset}.parquet'\n", []string{"lacks {partition}"}},
		{"path lacks topic for two topics", "kafka: {brokers: [b:9092], group: g, topics: [t, u]}\n" + storeOK + formatOK + "path: '{partition}-{first_offset}.parquet'\n", []string{"lacks {topic}: with more than one topic"}},
		{"path lacks topic for a regex", "kafka: {brokers: [b:9092], group: g, topic_regex: t}\n" + storeOK + formatOK + "path: '{partition}-{first_offset}.parquet'\n", []string{"lacks {topic}"}},
		{"path field empty", base + "path: '{field:a..b}/{partition}/{first_offset}'\n", []string{"{field} needs a dotted payload field"}},
		{"path open brace", base + "path: '{topic}/{partition/{first_offset}'\n", []string{"a '{' without its '}'"}},
		{"path close brace", base + "path: '{topic}/partition}/{first_offset}'\n", []string{"a '}' without its '{'"}},
		{"path record_time layout", base + "path: '{record_time}/{topic}/{partition}/{first_offset}'\n", []string{"{record_time} needs a Go time layout"}},
		{"path absolute", base + "path: '/{topic}/{partition}/{first_offset}'\n", []string{"must not start or end with '/'"}},
		{"path dotdot", base + "path: '../{topic}/{partition}/{first_offset}'\n", []string{`must not contain "." or ".." segments`}},
		{"time field", base + "time_field: a..b\n", []string{`time_field: "a..b" is not a dotted field path`}},
		{"timezone", base + "timezone: Mars/Olympus\n", []string{`timezone: "Mars/Olympus" is not an IANA time zone name`}},
		{"timezone local", base + "timezone: Local\n", []string{`timezone: "Local" is not an IANA time zone name`}},
		{"interval negative", base + "rotate: {interval: -1m}\n", []string{"rotate.interval: must be positive, or 0 to turn it off"}},
		{"records negative", base + "rotate: {records: -5}\n", []string{"rotate.records: must be positive, or 0 to turn it off"}},
		{"schedule uneven", base + "rotate: {schedule: 7h}\n", []string{"rotate.schedule: 7h does not divide 24h evenly"}},
		{"schedule days", base + "rotate: {schedule: 36h}\n", []string{"rotate.schedule: 36h is over a day but not a whole number of days"}},
		{"schedule tiny", base + "rotate: {schedule: 1ms}\n", []string{"rotate.schedule: must be at least 1s"}},
		{"no rotation", base + "rotate: {records: 0, bytes: 0, interval: 0}\n", []string{"config line 4: rotate: every limit is 0"}},
		{"codec", base + "parquet: {codec: zstdd}\n", []string{`parquet.codec: "zstdd" is not one of none, snappy, gzip, zstd, lz4_raw, brotli`}},
		{"codec lz4", base + "parquet: {codec: lz4}\n", []string{`"lz4" is not one of`, "use lz4_raw"}},
		{"codec level range", base + "parquet: {codec: 'zstd:23'}\n", []string{`parquet.codec: zstd level "23" is not a number from 1 to 22`}},
		{"codec level none", base + "parquet: {codec: 'snappy:1'}\n", []string{"parquet.codec: snappy takes no level"}},
		{"page version", base + "parquet: {page_version: 3}\n", []string{"parquet.page_version: must be at most 2, got 3"}},
		{"page bytes over row group", base + "parquet: {row_group_bytes: 1MiB, page_bytes: 2MiB}\n", []string{"parquet.page_bytes: 2MiB is more than parquet.row_group_bytes (1MiB)"}},
		{"bloom fpp", base + "parquet: {bloom_filters: ['a:2']}\n", []string{`parquet.bloom_filters: "a:2": the false-positive probability "2" is not a number between 0 and 1`}},
		{"bloom column", base + "parquet: {bloom_filters: [':0.1']}\n", []string{`parquet.bloom_filters: ":0.1": want column[:fpp]`}},
		{"bloom twice", base + "parquet: {bloom_filters: [a, 'a:0.1']}\n", []string{`parquet.bloom_filters: column "a" is listed twice`}},
		{"stats truncate", base + "parquet: {stats_truncate: -1}\n", []string{"parquet.stats_truncate: must not be negative"}},
		{"memory small", base + "memory: {limit: 8MiB}\n", []string{"memory.limit: must be at least 16MiB, got 8MiB"}},
		{"memory under row group", base + "memory: {limit: 32MiB}\n", []string{"memory.limit: 32MiB is less than parquet.row_group_bytes (64MiB), what one open file needs"}},
		{"memory under row group and part", kafkaOK + "store: {url: 's3://b'}\n" + formatOK + "memory: {limit: 70MiB}\n",
			[]string{"memory.limit: 70MiB is less than parquet.row_group_bytes (64MiB) plus store.part_size (8MiB)"}},
		{"metrics", base + "metrics: {listen: 9102}\n", []string{`metrics.listen: "9102": want host:port`}},
		{"log level", base + "log: {level: verbose}\n", []string{`log.level: "verbose" is not one of debug, info, warn, error`}},
		{"log format", base + "log: {format: xml}\n", []string{`log.format: "xml" is not one of text, json`}},
		{"shutdown", base + "shutdown: now\n", []string{`shutdown: "now" is not one of finish, abandon`}},
		{"errors", base + "errors: dead_letter\n", []string{`errors: dead_letter needs dead_letter.topic or dead_letter.url`}},
		{"errors value", base + "errors: drop\n", []string{`errors: "drop" is not one of fail, skip, dead_letter`}},
		{"dead letter topic", base + "dead_letter: {topic: 'a b'}\n", []string{`dead_letter.topic: "a b" is not a valid topic name`}},
		{"dead letter key", base + "dead_letter: {uri: 's3://x'}\n", []string{`dead_letter.uri: unknown key`}},
		{"dead letter url scheme", base + "dead_letter: {url: 'http://x'}\n", []string{`dead_letter.url: scheme "http" is not one of s3, gs, azblob, abfss, file`}},
		{"max record bytes", base + "max_record_bytes: 0\n", []string{"max_record_bytes: must be positive, got 0"}},
		{"max record bytes over the limit", base + "memory: {limit: 256MiB}\nmax_record_bytes: 64MiB\n",
			[]string{"max_record_bytes: 64MiB needs memory.limit of at least 470MiB, got 256MiB; lower max_record_bytes or raise memory.limit"}},
		{"max record bytes over the default limit", base + "max_record_bytes: 100MiB\n",
			[]string{"max_record_bytes: 100MiB needs memory.limit of at least 650MiB, got 512MiB"}},
		{"max record bytes over a small limit", base + "memory: {limit: 64MiB}\nparquet: {row_group_bytes: 8MiB}\nmax_record_bytes: 2MiB\n",
			[]string{"max_record_bytes: 2MiB needs memory.limit of at least 128MiB, got 64MiB"}},

		// Expansion.
		{"unset variable", base + "metrics: {listen: '${LISTEN}'}\n", []string{"config line 4: metrics.listen: environment variable LISTEN is not set"}},
		{"unset in list", "kafka: {brokers: ['${BROKER}'], group: g, topics: [t]}\n" + storeOK + formatOK, []string{"kafka.brokers[0]: environment variable BROKER is not set"}},
		{"unterminated", base + "metrics: {listen: '${LISTEN'}\n", []string{`metrics.listen: unterminated "${" (no closing "}") in "${LISTEN"`}},
		{"bad name", base + "metrics: {listen: '${1X}'}\n", []string{`metrics.listen: bad variable reference`}},
		{"empty name", base + "metrics: {listen: '${}'}\n", []string{`metrics.listen: "${" without a variable name`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse([]byte(tc.text), env)
			if err == nil {
				t.Fatalf("Parse gave %+v, want an error containing %q", c, tc.want)
			}
			if c != nil {
				t.Errorf("Parse returned a config with its error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error\n%v\nwant it to contain %q", err, w)
				}
			}
		})
	}
}

// TestAllErrors checks that one run reports every problem, in line order,
// and no cascade of errors from one mistake.
func TestAllErrors(t *testing.T) {
	text := `kafka:
  brokers: [b:9092]
  group: g
  topics: [t]
  start: middle
store:
  url: az://x
format:
  type: variant
rotate:
  records: many
  interval: -1s
parquet:
  codec: zstdd
bogus: 1
`
	_, err := Parse([]byte(text), nil)
	if err == nil {
		t.Fatal("no error")
	}
	want := []string{
		`config line 5: kafka.start: "middle" is not one of earliest, latest`,
		`config line 7: store.url: scheme "az" is not one of s3, gs, azblob, abfss, file`,
		`config line 11: rotate.records: want an integer, got "many"`,
		`config line 12: rotate.interval: must be positive, or 0 to turn it off`,
		`config line 14: parquet.codec: "zstdd" is not one of none, snappy, gzip, zstd, lz4_raw, brotli`,
		`config line 15: bogus: unknown key (allowed: `,
	}
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != len(want) {
		t.Fatalf("got %d errors, want %d:\n%v", len(lines), len(want), err)
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) {
			t.Errorf("error %d = %q, want prefix %q", i, lines[i], w)
		}
	}
}

func TestRelativePaths(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, "ca.pem", "events.schema")
	text := kafkaOK[:len(kafkaOK)-2] + ", tls: {ca_file: ca.pem}}\n" + storeOK + "format: {type: json, schema_file: events.schema}\n"

	// Load resolves against the file's directory, whatever the working
	// directory is.
	path := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Load(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Dir != dir || c.Kafka.TLS.CAFile != filepath.Join(dir, "ca.pem") || c.Format.SchemaFile != filepath.Join(dir, "events.schema") {
		t.Errorf("Dir %q, CAFile %q, SchemaFile %q", c.Dir, c.Kafka.TLS.CAFile, c.Format.SchemaFile)
	}

	// Parse resolves against the working directory.
	if _, err := Parse([]byte(text), nil); err == nil || !strings.Contains(err.Error(), "kafka.tls.ca_file") {
		t.Errorf("Parse in another directory: %v, want kafka.tls.ca_file not found", err)
	}
	t.Chdir(dir)
	c, err = Parse([]byte(text), nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Kafka.TLS.CAFile != filepath.Join(dir, "ca.pem") {
		t.Errorf("CAFile %q", c.Kafka.TLS.CAFile)
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "none.yaml"), nil)
	if !os.IsNotExist(err) {
		t.Errorf("Load of a missing file: %v", err)
	}
}

func TestPathWithoutTopic(t *testing.T) {
	c, err := Parse([]byte(base+"path: 'p{partition}/{first_offset}.parquet'\n"), nil)
	if err != nil || c.Path != "p{partition}/{first_offset}.parquet" {
		t.Errorf("one topic, path without {topic}: %v", err)
	}
}

// TestGCSStore: a gs:// store takes an endpoint, a part size and the
// retries, and the S3 keys keep their defaults.
func TestGCSStore(t *testing.T) {
	cfg := kafkaOK + "store: {url: 'gs://bucket/raw', endpoint: 'http://127.0.0.1:4443', part_size: 16MiB, max_retries: 3, max_retry_wait: 45s}\n" + formatOK
	c, err := Parse([]byte(cfg), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := Store{URL: "gs://bucket/raw", Endpoint: "http://127.0.0.1:4443", PartSize: 16 << 20, MaxRetries: 3,
		MaxRetryWait: 45 * time.Second, ConditionalWrites: true, StaleUploadAge: c.Store.StaleUploadAge}
	if c.Store != want {
		t.Errorf("store = %+v, want %+v", c.Store, want)
	}
}

// TestAzureStore: azblob:// and abfss:// stores take an endpoint (the
// account's URL), a part size and the retries.
func TestAzureStore(t *testing.T) {
	for _, u := range []string{"azblob://container/raw", "abfss://container@acct.dfs.core.windows.net/raw"} {
		cfg := kafkaOK + "store: {url: '" + u + "', endpoint: 'http://127.0.0.1:10000/devstoreaccount1', part_size: 16MiB, max_retries: 3}\n" + formatOK
		c, err := Parse([]byte(cfg), nil)
		if err != nil {
			t.Fatalf("%s: %v", u, err)
		}
		want := Store{URL: u, Endpoint: "http://127.0.0.1:10000/devstoreaccount1", PartSize: 16 << 20, MaxRetries: 3,
			MaxRetryWait: 20 * time.Second, ConditionalWrites: true, StaleUploadAge: c.Store.StaleUploadAge}
		if c.Store != want {
			t.Errorf("store = %+v, want %+v", c.Store, want)
		}
	}
	// A table's warehouse on Azure is the abfss:// form.
	cfg := kafkaOK + "store: {url: 'abfss://c@acct.dfs.core.windows.net/lake'}\n" + formatOK + "table: {format: iceberg, namespace: n, catalog: {type: sql, uri: 'sqlite:///x.db'}}\n"
	if c, err := Parse([]byte(cfg), nil); err != nil || c.Table == nil {
		t.Errorf("a table on an abfss:// store: %v", err)
	}
}

// TestDeadLetterTopicAndURL: with both, the topic takes the dead letters
// and the URL those too large for the topic.
func TestDeadLetterTopicAndURL(t *testing.T) {
	c, err := Parse([]byte(base+"dead_letter: {topic: dlq, url: 's3://b/dlq'}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.DeadLetter.Topic != "dlq" || c.DeadLetter.URL != "s3://b/dlq" || c.Errors != "dead_letter" {
		t.Errorf("dead_letter %+v, errors %q", c.DeadLetter, c.Errors)
	}
}

// TestMaxRecordBytesFollowsLimit checks max_record_bytes against
// memory.limit: unset, it is the largest record the limit holds (64MiB at
// most); set, it may be as large as that and no larger.
func TestMaxRecordBytesFollowsLimit(t *testing.T) {
	for _, tc := range []struct {
		limit, set string // set: max_record_bytes, or "" to leave it out
		want       int64  // 0: refused
	}{
		{"16MiB", "", 256 << 10},
		{"64MiB", "", 1 << 20},
		{"128MiB", "", 2 << 20},
		{"256MiB", "", 21708 << 10}, // (256MiB - 150MiB) / 5, in whole KiB
		{"470MiB", "", 64 << 20},
		{"512MiB", "", 64 << 20},
		{"4GiB", "", 64 << 20},
		{"64MiB", "1MiB", 1 << 20},
		{"64MiB", "1025KiB", 0},
		{"256MiB", "21MiB", 21 << 20},
		{"256MiB", "22MiB", 0},
		{"512MiB", "72MiB", 72 << 20},
		{"512MiB", "73MiB", 0},
		{"1GiB", "174MiB", 174 << 20},
		{"1GiB", "175MiB", 0},
	} {
		t.Run(tc.limit+"/"+tc.set, func(t *testing.T) {
			text := base + "memory: {limit: " + tc.limit + "}\nparquet: {row_group_bytes: 8MiB}\n"
			if tc.set != "" {
				text += "max_record_bytes: " + tc.set + "\n"
			}
			c, err := Parse([]byte(text), nil)
			switch {
			case tc.want == 0 && err == nil:
				t.Errorf("max_record_bytes %s accepted with memory.limit %s", tc.set, tc.limit)
			case tc.want == 0 && !strings.Contains(err.Error(), "max_record_bytes: "+tc.set+" needs memory.limit of at least"):
				t.Errorf("error does not name max_record_bytes and memory.limit: %v", err)
			case tc.want != 0 && err != nil:
				t.Error(err)
			case tc.want != 0 && c.MaxRecordBytes != tc.want:
				t.Errorf("max_record_bytes %d, want %d", c.MaxRecordBytes, tc.want)
			}
		})
	}
}

func TestEmptyMeansDefault(t *testing.T) {
	env := envOf(map[string]string{"EMPTY": ""})
	c, err := Parse([]byte(base+`rotate: {bytes: "${EMPTY}", interval: ""}
parquet: {codec: "${CODEC:-}", dictionary: ~}
log:
`), env)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Parse([]byte(kafkaOK+storeOK+"format: {type: variant, schema_file: '${EMPTY}', ignore_unknown_fields: ''}\n"), env); err != nil {
		t.Errorf("empty json-only keys refused for variant: %v", err)
	}
	if c.Rotate.Bytes != 256<<20 || c.Rotate.Interval != 10*time.Minute || c.Parquet.Codec != "zstd" || !c.Parquet.Dictionary || c.Log.Level != "info" {
		t.Errorf("empty values did not take defaults: %+v %+v", c.Rotate, c.Parquet)
	}
}

func TestExpansionInConfig(t *testing.T) {
	env := envOf(map[string]string{"N": "5000", "BROKERS": "a:1,b:2", "PS": "true", "GROUP": "grp"})
	c, err := Parse([]byte(`
kafka: {brokers: "${BROKERS}", group: "${GROUP}-$${literal}", topics: ["${TOPIC:-events}"]}
store: {url: "s3://bucket/${PREFIX:-raw}", path_style: "${PS}"}
format: {type: variant}
rotate: {records: "${N}", interval: "${INTERVAL:-90s}"}
`), env)
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case !reflect.DeepEqual(c.Kafka.Brokers, []string{"a:1", "b:2"}):
		t.Errorf("Brokers = %q", c.Kafka.Brokers)
	case c.Kafka.Group != "grp-${literal}":
		t.Errorf("Group = %q", c.Kafka.Group)
	case !reflect.DeepEqual(c.Kafka.Topics, []string{"events"}):
		t.Errorf("Topics = %q", c.Kafka.Topics)
	case c.Store.URL != "s3://bucket/raw" || !c.Store.PathStyle:
		t.Errorf("Store = %+v", c.Store)
	case c.Rotate.Records != 5000 || c.Rotate.Interval != 90*time.Second:
		t.Errorf("Rotate = %+v", c.Rotate)
	}
}

// TestExpansionKeepsStructure: a value that looks like YAML stays a string.
func TestExpansionKeepsStructure(t *testing.T) {
	env := envOf(map[string]string{"G": "{a: 1}\nstore: x", "T": "[x, y]"})
	c, err := Parse([]byte("kafka: {brokers: [b:9092], group: '${G}', topics: ['${T}']}\n"+storeOK+formatOK), env)
	if err == nil {
		t.Fatalf("topic %q accepted", c.Kafka.Topics)
	}
	if !strings.Contains(err.Error(), `kafka.topics: "[x, y]" is not a Kafka topic name`) || strings.Contains(err.Error(), "kafka.group") {
		t.Errorf("error %v", err)
	}
}

func TestDocsCoverEveryKey(t *testing.T) {
	doc, err := os.ReadFile("../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	sections := []struct {
		prefix string
		keys   []string
	}{
		{"", topKeys}, {"kafka.", kafkaKeys}, {"format.registry.", registryKeys}, {"kafka.sasl.", saslKeys}, {"kafka.tls.", tlsKeys},
		{"kafka.fetch.", fetchKeys}, {"store.", storeKeys}, {"format.", formatKeys}, {"rotate.", rotateKeys},
		{"parquet.", parquetKeys}, {"memory.", memoryKeys}, {"metrics.", metricsKeys}, {"log.", logKeys}, {"dead_letter.", deadLetterKeys},
		{"table.", tableKeys}, {"table.catalog.", catalogKeys},
	}
	for _, s := range sections {
		for _, k := range s.keys {
			if !strings.Contains(string(doc), "`"+s.prefix+k+"`") {
				t.Errorf("docs/configuration.md does not document `%s%s`", s.prefix, k)
			}
		}
	}
}

func TestAliases(t *testing.T) {
	c, err := Parse([]byte(`
kafka: {brokers: &brokers [b:9092], group: &name archive, topics: [*name]}
store: {url: "file:///out"}
format: {type: variant, column: *name}
rotate: &limits {records: 10}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Kafka.Topics[0] != "archive" || c.Format.Column != "archive" || c.Rotate.Records != 10 {
		t.Errorf("aliases not followed: %+v", c)
	}
	_, err = Parse([]byte(base+"rotate: {records: &n x}\nparquet: {page_version: *n}\n"), nil)
	if err == nil || !strings.Contains(err.Error(), `config line 4: rotate.records: want an integer, got "x"`) ||
		!strings.Contains(err.Error(), `config line 5: parquet.page_version: want an integer, got "x"`) {
		t.Errorf("alias errors: %v", err)
	}
}

func TestAvroSettings(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, "ca.pem")
	path := filepath.Join(dir, "c.yaml")
	text := `
kafka: {brokers: [b:9092], group: g, topics: [t]}
store: {url: "file:///out"}
format:
  type: AVRO
  registry:
    url: https://registry.example.com:8081/base
    username: u
    password: ${PW}
    ca_file: ca.pem
    cache_size: 50
    timeout: 3s
  schema_compatibility: Backward
`
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	const pw = "hunter2-registry-secret"
	c, err := Load(path, envOf(map[string]string{"PW": pw}))
	if err != nil {
		t.Fatal(err)
	}
	want := Registry{URL: "https://registry.example.com:8081/base", Username: "u", Password: pw,
		CAFile: filepath.Join(dir, "ca.pem"), CacheSize: 50, Timeout: 3 * time.Second}
	if c.Format.Type != "avro" || c.Format.SchemaCompatibility != "backward" || c.Format.Registry == nil || *c.Format.Registry != want {
		t.Fatalf("Format = %+v, registry %+v; want avro, backward, %+v", c.Format, c.Format.Registry, want)
	}
	for _, out := range []string{c.Redacted(), fmt.Sprintf("%+v", c.Format), fmt.Sprintf("%+v", *c.Format.Registry), fmt.Sprintf("%#v", *c.Format.Registry)} {
		if strings.Contains(out, pw) {
			t.Errorf("the registry password is printed: %s", out)
		}
	}
	if out := c.Redacted(); !strings.Contains(out, "password: '[redacted]'") && !strings.Contains(out, "password: \"[redacted]\"") {
		t.Errorf("Redacted() does not show the password as [redacted]:\n%s", out)
	}
	// A bad value of the secret names the key, never the value.
	_, err = Parse([]byte(strings.Replace(text, "${PW}", "${PW", 1)), envOf(map[string]string{"PW": pw}))
	if err == nil || !strings.Contains(err.Error(), "format.registry.password") {
		t.Errorf("bad ${ in the password: %v", err)
	}

	// Defaults.
	c, err = Parse([]byte(kafkaOK+storeOK+"format: {type: avro, registry: {url: 'http://r:8081'}}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Format.SchemaCompatibility != "none" || *c.Format.Registry != (Registry{URL: "http://r:8081", CacheSize: 1000, Timeout: 10 * time.Second}) {
		t.Errorf("defaults: %+v %+v", c.Format, c.Format.Registry)
	}

	// The rendered config loads back to the same one, the secret aside.
	c, err = Load(path, envOf(map[string]string{"PW": pw}))
	if err != nil {
		t.Fatal(err)
	}
	c2, err := Parse([]byte(c.Redacted()), nil)
	if err != nil {
		t.Fatalf("Parse(Redacted()): %v\n%s", err, c.Redacted())
	}
	if c2.Format.Registry.Password.Value() != redacted {
		t.Errorf("password rendered as %q", c2.Format.Registry.Password.Value())
	}
	c2.Format.Registry.Password = c.Format.Registry.Password
	c2.Dir = c.Dir
	if !reflect.DeepEqual(c, c2) {
		t.Errorf("round trip changed the config:\n got %+v %+v\nwant %+v %+v", c2.Format, c2.Format.Registry, c.Format, c.Format.Registry)
	}
}

// TestCodecs: parquet.codec takes what compress.Parse takes, convert's
// --codec grammar, aliases included, stored in lower case.
func TestCodecs(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"none", "none"},
		{"uncompressed", "uncompressed"},
		{"UNCOMPRESSED", "uncompressed"},
		{"lz4_raw", "lz4_raw"},
		{"lz4raw", "lz4raw"},
		{"'lz4raw:9'", "lz4raw:9"},
		{"'Brotli:11'", "brotli:11"},
		{"'gzip:1'", "gzip:1"},
	} {
		c, err := Parse([]byte(base+"parquet: {codec: "+tc.in+"}\n"), nil)
		if err != nil {
			t.Errorf("codec %s: %v", tc.in, err)
			continue
		}
		if c.Parquet.Codec != tc.want {
			t.Errorf("codec %s = %q, want %q", tc.in, c.Parquet.Codec, tc.want)
		}
	}
	for _, tc := range []struct{ in, want string }{
		{"'lz4raw:10'", `parquet.codec: lz4raw level "10" is not a number from 1 to 9`},
		{"'uncompressed:1'", "parquet.codec: uncompressed takes no level"},
		{"'zstd:x'", `parquet.codec: zstd level "x" is not a number from 1 to 22`},
		{"'zstd:0'", `parquet.codec: zstd level "0" is not a number from 1 to 22`},
	} {
		_, err := Parse([]byte(base+"parquet: {codec: "+tc.in+"}\n"), nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("codec %s: error %v, want %q", tc.in, err, tc.want)
		}
	}
}

// TestDocsListEveryFormat: the format.type comment of the example
// configuration in README.md and docs/configuration.md lists exactly the
// kinds Load accepts, in its order.
func TestDocsListEveryFormat(t *testing.T) {
	want := "# " + strings.Join(formatValues, " | ")
	for _, name := range []string{"../README.md", "../docs/configuration.md"} {
		doc, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, line := range strings.Split(string(doc), "\n") {
			if !strings.HasPrefix(strings.TrimSpace(line), "type: json ") {
				continue
			}
			found = true
			if got := line[max(strings.Index(line, "#"), 0):]; got != want {
				t.Errorf("%s: format.type lists %q, want %q", name, got, want)
			}
		}
		if !found {
			t.Errorf("%s has no example line 'type: json  # …'", name)
		}
	}
}

// TestFormatSpecs: every value format.type takes has its spec, and every
// spec is a value format.type takes.
func TestFormatSpecs(t *testing.T) {
	for _, name := range FormatTypes() {
		if _, ok := formatSpecs[name]; !ok {
			t.Errorf("format.type %s has no formatSpec", name)
		}
	}
	for name := range formatSpecs {
		if !slices.Contains(FormatTypes(), name) {
			t.Errorf("formatSpecs has %s, which format.type does not take", name)
		}
	}
}
