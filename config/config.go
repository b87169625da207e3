package config

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/pqsink/pqsink/archive"
)

// Config is everything `pqsink run` needs, as read from a YAML file by Load
// or Parse: every default filled in, every value validated, secrets wrapped
// in Secret, and relative file paths resolved against Dir. docs/configuration.md
// describes each key.
type Config struct {
	// Kafka is the source: brokers, consumer group and topics (kafka).
	// Required; see Kafka for the defaults of its optional keys.
	Kafka Kafka
	// Store is where files go (store). Required; see Store for the defaults
	// of its optional keys.
	Store Store
	// Format says how record values are decoded (format). Required; see
	// Format for the defaults of its optional keys.
	Format Format
	// Envelope adds the _kafka group of columns (topic, partition, offset,
	// timestamp, key, headers) beside the payload (envelope).
	// Defaults to true.
	Envelope bool
	// Path is the object key template under the store URL's prefix (path).
	// Placeholders: {topic}, {partition}, {first_offset},
	// {record_time:LAYOUT} (a Go time layout) and {field:a.b}. {partition}
	// and {first_offset} are required, and {topic} when more than one
	// topic can be consumed.
	// Defaults to "{topic}/{topic}+{partition}+{first_offset}.parquet".
	Path string
	// TimeField is the dotted payload field whose value is the record time
	// for {record_time} (time_field); "" takes the Kafka record timestamp.
	// Defaults to "".
	TimeField string
	// Timezone is the zone {record_time} is rendered in (timezone), loaded
	// from the IANA name in TimezoneName.
	// Defaults to UTC.
	Timezone *time.Location
	// TimezoneName is the IANA name Timezone was loaded from (timezone).
	// Defaults to "UTC".
	TimezoneName string
	// Rotate says when an open file is closed and uploaded (rotate).
	// Defaults to the defaults of Rotate's fields.
	Rotate Rotate
	// Parquet tunes the files written (parquet).
	// Defaults to the defaults of Parquet's fields.
	Parquet Parquet
	// Memory bounds the bytes held by open files (memory).
	// Defaults to the defaults of Memory's fields.
	Memory Memory
	// Metrics is the Prometheus endpoint (metrics).
	// Defaults to off.
	Metrics Metrics
	// Log sets the log format and level (log).
	// Defaults to text at level info.
	Log Log
	// Shutdown is what happens to open files on SIGTERM (shutdown): finish
	// uploads them and commits, abandon drops them so their records are
	// consumed again after restart.
	// Defaults to "finish".
	Shutdown string
	// ShutdownTimeout bounds a finishing shutdown (shutdown_timeout); files
	// still open after it are abandoned.
	// Defaults to 30s.
	ShutdownTimeout time.Duration
	// MaxRecordBytes is the largest record value accepted
	// (max_record_bytes); a larger one is handled as Errors says. It must
	// be one that Memory.Limit holds (MemoryForRecord).
	// Defaults to 64MiB, or what Memory.Limit holds if less
	// (DefaultMaxRecordBytes).
	MaxRecordBytes int64
	// Errors is what a record that cannot be written does (errors): fail
	// stops its partition without committing it, skip logs, counts and
	// drops it, dead_letter sends it to DeadLetter.Topic.
	// Defaults to "dead_letter" when DeadLetter.Topic is set, else "fail".
	Errors string
	// DeadLetter is where rejected records go (dead_letter).
	DeadLetter DeadLetter
	// Table is the Iceberg table the files are committed to (table); nil
	// when the key is absent, and the files are then only objects under
	// store.url.
	// Defaults to nil.
	Table *Table
	// Dir is the directory relative paths in the file resolve against: the
	// config file's directory for Load, the working directory for Parse.
	// It is not a key of the file.
	// Defaults to the directory described above.
	Dir string
}

// Kafka is the kafka section: where records come from.
type Kafka struct {
	// Brokers are the bootstrap brokers, each host:port (brokers).
	// Required; no default.
	Brokers []string
	// Group is the consumer group; offsets and file chains belong to it
	// (group). Required; no default.
	Group string
	// Topics lists the topics consumed (topics). Exactly one of Topics
	// and TopicRegex is set.
	// Defaults to none.
	Topics []string
	// TopicRegex selects topics by a Go regular expression (topic_regex).
	// Exactly one of Topics and TopicRegex is set.
	// Defaults to "".
	TopicRegex string
	// Start is where a partition without a committed offset begins
	// (start): earliest or latest.
	// Defaults to "earliest".
	Start string
	// ClientID is the Kafka client id (client_id).
	// Defaults to "pqsink".
	ClientID string
	// InstanceID makes the sink a static member of the group
	// (instance_id, Kafka's group.instance.id, KIP-345): unique in the
	// group and stable across restarts of the same member, such as a pod
	// name. A static member restarted within the session timeout gets its
	// partitions back with no rebalance. Empty: a dynamic member.
	// Defaults to "".
	InstanceID string
	// SASL is the authentication (sasl); nil when the key is absent.
	// Defaults to nil.
	SASL *SASL
	// TLS is the transport encryption (tls); nil when the key is absent.
	// Defaults to nil.
	TLS *TLS
	// Fetch tunes fetch requests (fetch).
	// Defaults to the defaults of Fetch's fields.
	Fetch Fetch
	// SessionTimeout is the consumer group session timeout
	// (session_timeout).
	// Defaults to 30s.
	SessionTimeout time.Duration
	// HeartbeatInterval is the interval of group heartbeats
	// (heartbeat_interval); less than SessionTimeout.
	// Defaults to 3s.
	HeartbeatInterval time.Duration
	// RebalanceTimeout is how long the group waits for members to rejoin
	// during a rebalance (rebalance_timeout).
	// Defaults to 30s.
	RebalanceTimeout time.Duration
	// CommitTimeout bounds one offset commit (commit_timeout).
	// Defaults to 30s.
	CommitTimeout time.Duration
	// TopicRefresh is how often topic_regex is matched again against the
	// cluster's topics, or, with Topics, how often the sink checks that
	// they exist (topic_refresh). Defaults to 30s.
	TopicRefresh time.Duration
}

// DeadLetter is the dead_letter section.
type DeadLetter struct {
	// Topic receives each rejected record with its key, value and headers,
	// plus the headers pqsink.error, pqsink.reason, pqsink.topic,
	// pqsink.partition and pqsink.offset (topic).
	// Defaults to none.
	Topic string
	// URL is an object prefix in any store that store.url takes
	// (s3://, gs://, azblob://, abfss://, file://) that receives the
	// rejected records as JSON Lines objects, one object per batch, written create-if-absent like the Parquet files (url). With
	// Topic, it receives only the records too large for the topic's
	// max.message.bytes, which are otherwise sent with their value cut to
	// fit. An s3:// URL uses the store section's endpoint and credentials.
	// Defaults to none.
	URL string
}

// SASL is the kafka.sasl section.
type SASL struct {
	// Mechanism is PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 (mechanism).
	// Required; no default.
	Mechanism string
	// Username is the SASL user (username).
	// Required; no default.
	Username string
	// Password is the SASL password (password).
	// Required; no default.
	Password Secret
}

// TLS is the kafka.tls section. Relative file paths are resolved against
// Config.Dir, and the files must exist.
type TLS struct {
	// CAFile holds PEM CA certificates to trust instead of the system's
	// (ca_file).
	// Defaults to "" (the system roots).
	CAFile string
	// CertFile is the PEM client certificate (cert_file); set together
	// with KeyFile.
	// Defaults to "" (no client certificate).
	CertFile string
	// KeyFile is the PEM client key (key_file); set together with CertFile.
	// Defaults to "".
	KeyFile string
	// InsecureSkipVerify turns off verification of the broker's
	// certificate (insecure_skip_verify). For tests only.
	// Defaults to false.
	InsecureSkipVerify bool
	// ServerName overrides the name checked in the broker's certificate
	// (server_name).
	// Defaults to "" (the broker's host name).
	ServerName string
}

// Fetch is the kafka.fetch section.
type Fetch struct {
	// MinBytes is the least data a fetch waits for (min_bytes).
	// Defaults to 1.
	MinBytes int64
	// MaxBytes is the most data one fetch returns (max_bytes).
	// Defaults to 16MiB.
	MaxBytes int64
	// MaxWait is how long a fetch waits for MinBytes (max_wait).
	// Defaults to 500ms.
	MaxWait time.Duration
}

// Store is the store section: the object store files are uploaded to.
type Store struct {
	// URL is s3://bucket[/prefix], gs://bucket[/prefix],
	// azblob://container[/prefix],
	// abfss://container@account.dfs.core.windows.net[/prefix] or
	// file:///absolute/dir (url).
	// Required; no default.
	URL string
	// Endpoint is the S3 API endpoint, http(s)://host[:port], for
	// S3-compatible stores; for gs:// the JSON API's, of an emulator
	// (http://, reached without credentials) or a private endpoint
	// (https://); for azblob:// and abfss:// the storage account's URL,
	// e.g. http://127.0.0.1:10000/devstoreaccount1 for Azurite
	// (endpoint).
	// Defaults to "" (AWS; Google's public endpoint, or
	// STORAGE_EMULATOR_HOST; https://ACCOUNT.blob.core.windows.net).
	Endpoint string
	// Region is the S3 region (region).
	// Defaults to "" (the AWS SDK's own lookup: AWS_REGION, shared config).
	Region string
	// PathStyle addresses buckets as endpoint/bucket rather than
	// bucket.endpoint (path_style); most S3-compatible servers need it.
	// Defaults to false.
	PathStyle bool
	// AccessKey is the static access key id (access_key); set together
	// with SecretKey.
	// Defaults to "" (the AWS SDK's default credential chain).
	AccessKey string
	// SecretKey is the static secret access key (secret_key).
	// Defaults to "".
	SecretKey Secret
	// SessionToken is the session token of temporary credentials
	// (session_token); needs AccessKey.
	// Defaults to "".
	SessionToken Secret
	// PartSize is the size of a multipart upload part, on GCS of a
	// resumable upload chunk, rounded up to 256KiB (part_size), between
	// 5MiB and 5GiB.
	// Defaults to 8MiB.
	PartSize int64
	// ConditionalWrites uploads with If-None-Match: * (conditional_writes).
	// Set it to false only for stores that lack it: files are then
	// overwritten, which weakens exactly-once (see docs/configuration.md).
	// Defaults to true.
	ConditionalWrites bool
	// SSE is the server-side encryption: "", AES256 or aws:kms (sse).
	// Defaults to "" (the bucket's default).
	SSE string
	// SSEKMSKeyID is the KMS key for SSE aws:kms (sse_kms_key_id).
	// Defaults to "" (the account's default KMS key).
	SSEKMSKeyID string
	// StaleUploadAge is the age after which an unfinished multipart upload
	// under the prefix is aborted when a partition is assigned
	// (stale_upload_age).
	// Defaults to 24h.
	StaleUploadAge time.Duration
	// MaxRetries is how often a failed store request is retried
	// (max_retries).
	// Defaults to 10.
	MaxRetries int
	// MaxRetryWait is the longest wait before one retry of a failed
	// store request, backoff or Retry-After alike (max_retry_wait): a
	// throttled service that asks for longer is retried after this long.
	// Defaults to 20s.
	MaxRetryWait time.Duration
}

// Format is the format section: how record values become rows.
type Format struct {
	// Type is json (typed columns from a schema), variant (one VARIANT
	// column), avro (Confluent wire format, schemas from a registry) or
	// protobuf (Confluent wire format with a registry, or plain messages
	// of a .proto file's message), json_schema (JSON validated against a
	// JSON Schema, from a registry in Confluent's wire format or from
	// SchemaFile) (type).
	// Required; no default.
	Type string
	// Envelope is how a value carries a change to an upsert table's row
	// (envelope): debezium for Debezium change events, whose after is
	// the row; table.mode upsert only. Read by json, json_schema with
	// schema_file and avro.
	// Defaults to "": the value is the row.
	Envelope string
	// SchemaFile is the Parquet schema in message syntax (schema_file);
	// required for json, refused for variant. For json_schema, the JSON
	// Schema of plain JSON values, when there is no Registry. Resolved
	// against Config.Dir.
	// Defaults to "".
	SchemaFile string
	// IgnoreUnknownFields drops JSON fields the schema lacks instead of
	// failing the record (ignore_unknown_fields); json only.
	// Defaults to false.
	IgnoreUnknownFields bool
	// LossyNumbers stores a JSON number that its column cannot hold
	// exactly as the nearest value instead of rejecting the record
	// (lossy_numbers): one that underflows a FLOAT or DOUBLE column
	// (1e-400) becomes 0 or a subnormal; in a VARIANT, one that underflows
	// a double or has more digits than a decimal keeps becomes the nearest
	// double. json and variant only.
	// Defaults to false.
	LossyNumbers bool
	// Column is the name of the VARIANT column (column); variant only.
	// Defaults to "payload".
	Column string
	// Shred is auto (choose shredded fields from a sample), none, or the
	// path of a file naming the fields to shred (shred); variant only.
	// Defaults to "auto".
	Shred string
	// ShredSample is how many records auto shredding samples
	// (shred_sample); variant only.
	// Defaults to 10000.
	ShredSample int
	// Registry is the Confluent Schema Registry that holds the writer
	// schemas of Avro records (registry); required for avro, and for
	// json_schema without SchemaFile (the JSON Schemas of records in
	// Confluent's JSON Schema wire format); for protobuf, the registry or
	// proto_file; refused otherwise.
	// Defaults to nil.
	Registry *Registry
	// SchemaCompatibility is none (a new schema id starts a new file) or
	// backward (records of older compatible schemas are resolved onto the
	// newest and share its files) (schema_compatibility); avro only.
	// Defaults to "none" for avro, "" otherwise.
	SchemaCompatibility string
	// Protobuf holds the keys of format.type protobuf (proto_file,
	// import_paths, message); nil for the other types. A pointer, so that
	// Format stays comparable.
	// Defaults to nil.
	Protobuf *Protobuf
}

// Registry is the format.registry section: where the Avro writer schemas
// are looked up by the id in each record's Confluent wire header.
type Registry struct {
	// URL is the registry's base URL, http or https (url).
	// Required; no default.
	URL string
	// Username is the HTTP basic authentication user (username).
	// Defaults to "" (no authentication).
	Username string
	// Password is the HTTP basic authentication password (password).
	// Defaults to "".
	Password Secret
	// CAFile holds PEM CA certificates to trust for https instead of the
	// system's (ca_file). Resolved against Config.Dir.
	// Defaults to "" (the system roots).
	CAFile string
	// CacheSize bounds the schemas kept by id (cache_size).
	// Defaults to 1000.
	CacheSize int
	// Timeout bounds each request to the registry (timeout).
	// Defaults to 10s.
	Timeout time.Duration
}

// Rotate is the rotate section: a file is closed and uploaded when any
// enabled limit is reached. At least one limit must be enabled.
type Rotate struct {
	// Records closes a file at this many records (records); 0 turns it off.
	// Defaults to 1000000.
	Records int64
	// Bytes closes a file at about this many bytes written (bytes); 0 turns
	// it off.
	// Defaults to 256MiB.
	Bytes int64
	// Interval closes a file this long after its first record (interval);
	// 0 turns it off.
	// Defaults to 10m; with a table section and no freshness setting,
	// what DefaultFreshnessTarget derives (5s; see Table.FreshnessTarget).
	Interval time.Duration
	// Schedule closes all files at wall-clock multiples of this period
	// (schedule), e.g. 1h closes at every full hour; it divides 24h evenly,
	// or is a whole number of days. 0 turns it off.
	// Defaults to 0.
	Schedule time.Duration
}

// Parquet is the parquet section.
type Parquet struct {
	// Codec is none (or uncompressed), snappy, gzip, zstd, lz4_raw (or
	// lz4raw) or brotli, with an optional ":LEVEL" (codec), as
	// compress.Parse reads it, stored in lower case.
	// Defaults to "zstd".
	Codec string
	// RowGroupBytes is the target size of a row group in memory
	// (row_group_bytes).
	// Defaults to 64MiB.
	RowGroupBytes int64
	// PageBytes is the target uncompressed size of a data page
	// (page_bytes).
	// Defaults to 1MiB.
	PageBytes int64
	// PageVersion is the data page version, 1 or 2 (page_version).
	// Defaults to 1.
	PageVersion int
	// Dictionary turns dictionary encoding on (dictionary).
	// Defaults to true.
	Dictionary bool
	// PageIndex writes the column and offset indexes (page_index).
	// Defaults to true.
	PageIndex bool
	// Checksums writes a CRC32 in every page header (checksums).
	// Defaults to true.
	Checksums bool
	// BloomFilters lists "column[:fpp]" entries, column a dotted path
	// and fpp the false-positive probability in (0, 1) (bloom_filters).
	// Defaults to none.
	BloomFilters []string
	// StatsTruncate bounds binary min/max statistics to this many bytes
	// (stats_truncate); 0 turns truncation off.
	// Defaults to 64.
	StatsTruncate int
}

// Memory is the memory section.
type Memory struct {
	// Limit is the budget for all open row groups and upload parts
	// (limit); at least 16MiB, and room for one row group plus one part.
	// Defaults to 512MiB.
	Limit int64
}

// Metrics is the metrics section.
type Metrics struct {
	// Listen is the host:port of the Prometheus /metrics endpoint
	// (listen); "" turns it off.
	// Defaults to "".
	Listen string
	// StallTimeout is how long a partition with records to read may go
	// without reaching a new offset before /readyz says the sink is not
	// ready (stall_timeout). It should exceed the longest a healthy
	// partition waits: for memory, for an upload, for a commit.
	// Defaults to 2m.
	StallTimeout time.Duration
}

// Log is the log section.
type Log struct {
	// Format is text or json (format).
	// Defaults to "text".
	Format string
	// Level is debug, info, warn or error (level).
	// Defaults to "info".
	Level string
}

const (
	kib = int64(1) << 10
	mib = int64(1) << 20
	gib = int64(1) << 30
)

// defaults returns the configuration before the file is read: every
// documented default, and nothing for the required keys.
func defaults() Config {
	return Config{
		Kafka: Kafka{
			Start:    "earliest",
			ClientID: "pqsink",
			Fetch: Fetch{
				MinBytes: 1,
				MaxBytes: 16 * mib,
				MaxWait:  500 * time.Millisecond,
			},
			SessionTimeout:    30 * time.Second,
			HeartbeatInterval: 3 * time.Second,
			RebalanceTimeout:  30 * time.Second,
			CommitTimeout:     30 * time.Second,
			TopicRefresh:      30 * time.Second,
		},
		Store: Store{
			PartSize:          8 * mib,
			ConditionalWrites: true,
			StaleUploadAge:    24 * time.Hour,
			MaxRetries:        10,
			MaxRetryWait:      20 * time.Second,
		},
		Format: Format{
			Column:      "payload",
			Shred:       "auto",
			ShredSample: 10000,
		},
		Envelope:     true,
		Path:         archive.DefaultPath,
		Timezone:     time.UTC,
		TimezoneName: "UTC",
		Rotate: Rotate{
			Records:  1000000,
			Bytes:    256 * mib,
			Interval: 10 * time.Minute,
		},
		Parquet: Parquet{
			Codec:         "zstd",
			RowGroupBytes: 64 * mib,
			PageBytes:     1 * mib,
			PageVersion:   1,
			Dictionary:    true,
			PageIndex:     true,
			Checksums:     true,
			StatsTruncate: 64,
		},
		Memory:          Memory{Limit: 512 * mib},
		Metrics:         Metrics{StallTimeout: 2 * time.Minute},
		Log:             Log{Format: "text", Level: "info"},
		Shutdown:        "finish",
		ShutdownTimeout: 30 * time.Second,
		MaxRecordBytes:  64 * mib,
		Errors:          "fail",
	}
}

// Load reads the config file at path. Relative paths in it resolve against
// the file's directory. env looks up the variables of ${VAR} references;
// pass os.LookupEnv, or nil to treat every variable as unset. The error
// lists every problem found, each naming its key and, where known, its line.
func Load(path string, env func(string) (string, bool)) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	return parse(data, env, filepath.Dir(abs), nil)
}

// Parse reads a config from data, resolving relative paths against the
// working directory; otherwise it is Load.
func Parse(data []byte, env func(string) (string, bool)) (*Config, error) {
	dir, err := os.Getwd()
	if err != nil {
		return nil, fmt.Errorf("config: resolving relative paths: %w", err)
	}
	return parse(data, env, dir, nil)
}

// parse decodes and checks a config; the required keys of optional may be
// left out.
func parse(data []byte, env func(string) (string, bool), dir string, optional []string) (*Config, error) {
	if env == nil {
		env = func(string) (string, bool) { return "", false }
	}
	root, err := document(data)
	if err != nil {
		return nil, err
	}
	d := &decoder{env: env, dir: dir}
	c := defaults()
	c.Dir = dir
	d.config(root, &c)
	if optional != nil {
		kept := d.problems[:0]
		for _, p := range d.problems {
			if !slices.Contains(optional, p.key) || !strings.HasPrefix(p.msg, "required") {
				kept = append(kept, p)
			}
		}
		d.problems = kept
	}
	if err := d.err(); err != nil {
		return nil, err
	}
	return &c, nil
}

// document parses data as one YAML document and returns its top node.
func document(data []byte) (*yaml.Node, error) {
	dec := yaml.NewDecoder(strings.NewReader(string(data)))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("config is empty")
		}
		return nil, yamlError(err)
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case err == nil:
		return nil, fmt.Errorf("config line %d: a second YAML document; the config is one document", next.Line)
	case !errors.Is(err, io.EOF):
		return nil, yamlError(err)
	}
	if len(doc.Content) == 0 {
		return nil, errors.New("config is empty")
	}
	return doc.Content[0], nil
}

var anchorName = regexp.MustCompile(`anchor '[^']*'`)

// yamlError rewrites the YAML library's syntax errors to our format,
// "config line N: ...". They quote no values, so no secret can leak.
func yamlError(err error) error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	// Except anchor names, which might be anything.
	msg = anchorName.ReplaceAllString(msg, "anchor")
	var line int
	if n, _ := fmt.Sscanf(msg, "line %d:", &line); n == 1 {
		_, rest, _ := strings.Cut(msg, ":")
		return fmt.Errorf("config line %d: %s", line, strings.TrimSpace(rest))
	}
	return fmt.Errorf("config: %s", msg)
}
