package config

import (
	"fmt"
	"math"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/pqsink/pqsink/archive"
)

// The keys of each section, in the order docs/configuration.md and Redacted list
// them.
var (
	topKeys = []string{"kafka", "store", "format", "envelope", "path", "time_field", "timezone",
		"rotate", "parquet", "memory", "metrics", "log", "shutdown", "shutdown_timeout",
		"max_record_bytes", "errors", "dead_letter", "table"}
	deadLetterKeys = []string{"topic", "url"}
	kafkaKeys      = []string{"brokers", "group", "topics", "topic_regex", "start", "client_id", "instance_id", "sasl", "tls",
		"fetch", "session_timeout", "heartbeat_interval", "rebalance_timeout", "commit_timeout", "topic_refresh"}
	saslKeys  = []string{"mechanism", "username", "password"}
	tlsKeys   = []string{"ca_file", "cert_file", "key_file", "insecure_skip_verify", "server_name"}
	fetchKeys = []string{"min_bytes", "max_bytes", "max_wait"}
	storeKeys = []string{"url", "endpoint", "region", "path_style", "access_key", "secret_key", "session_token",
		"part_size", "conditional_writes", "sse", "sse_kms_key_id", "stale_upload_age", "max_retries", "max_retry_wait"}
	formatKeys = append([]string{"type", "schema_file", "ignore_unknown_fields", "column", "shred", "shred_sample",
		"registry", "schema_compatibility", "lossy_numbers", "envelope"}, protobufKeys...)
	registryKeys = []string{"url", "username", "password", "ca_file", "cache_size", "timeout"}
	rotateKeys   = []string{"records", "bytes", "interval", "schedule"}
	parquetKeys  = []string{"codec", "row_group_bytes", "page_bytes", "page_version", "dictionary", "page_index",
		"checksums", "bloom_filters", "stats_truncate"}
	memoryKeys  = []string{"limit"}
	metricsKeys = []string{"listen", "stall_timeout"}
	logKeys     = []string{"format", "level"}
)

// The allowed values of the enumerated keys.
var (
	startValues     = []string{"earliest", "latest"}
	mechanismValues = []string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"}
	sseValues       = []string{"AES256", "aws:kms"}
	formatValues    = []string{"json", "variant", "avro", "protobuf", "json_schema"}
	compatValues    = []string{"none", "backward"}
	logFormatValues = []string{"text", "json"}
	logLevelValues  = []string{"debug", "info", "warn", "error"}
	shutdownValues  = []string{"finish", "abandon"}
	errorsValues    = []string{"fail", "skip", "dead_letter"}
)

// notYet explains values that are planned but not supported yet (none
// at the moment).
var notYet = map[string]string{}

const maxInt = math.MaxInt64

func (d *decoder) config(root *yaml.Node, c *Config) {
	top := d.section("", 0, root, topKeys)
	if top.broken {
		return
	}
	top.boolean("envelope", &c.Envelope)
	d.kafka(top.sub("kafka", kafkaKeys), &c.Kafka)
	d.store(top.sub("store", storeKeys), &c.Store)
	d.format(top.sub("format", formatKeys), &c.Format, c.Envelope)
	top.str("path", &c.Path)
	if !top.bad["path"] {
		needTopic := c.Kafka.TopicRegex != "" || len(c.Kafka.Topics) > 1
		if _, err := archive.Parse(c.Path, needTopic); err != nil {
			top.fail("path", "%v", err)
		}
	}
	if top.str("time_field", &c.TimeField) {
		switch {
		case slices.Contains(strings.Split(c.TimeField, "."), ""):
			top.fail("time_field", "%s is not a dotted field path like ts or meta.created_at", quote(c.TimeField))
		}
	}
	if top.str("timezone", &c.TimezoneName) {
		loc, err := time.LoadLocation(c.TimezoneName)
		if err != nil || c.TimezoneName == "Local" {
			top.fail("timezone", "%s is not an IANA time zone name like UTC or Europe/Berlin", quote(c.TimezoneName))
		} else {
			c.Timezone = loc
		}
	}
	rot := top.sub("rotate", rotateKeys)
	d.rotate(rot, &c.Rotate)
	d.rotateIntervalSet = rot.set["interval"]
	d.rotateScheduleSet = rot.set["schedule"]
	par := top.sub("parquet", parquetKeys)
	d.parquet(par, &c.Parquet)
	mem := top.sub("memory", memoryKeys)
	mem.size("limit", &c.Memory.Limit, 16*mib, maxInt)
	// An open file holds a row group and, while it uploads to S3, GCS or
	// Azure, a part (a chunk, a block).
	need, what := c.Parquet.RowGroupBytes, "parquet.row_group_bytes ("+formatSize(c.Parquet.RowGroupBytes)+")"
	if !strings.HasPrefix(c.Store.URL, "file:") {
		need += c.Store.PartSize
		what += " plus store.part_size (" + formatSize(c.Store.PartSize) + ")"
	}
	if need > c.Memory.Limit && !mem.bad["limit"] && !par.bad["row_group_bytes"] {
		mem.fail("limit", "%s is less than %s, what one open file needs", formatSize(c.Memory.Limit), what)
	}
	met := top.sub("metrics", metricsKeys)
	if met.str("listen", &c.Metrics.Listen) {
		if err := checkHostPort(c.Metrics.Listen, true); err != nil {
			met.fail("listen", "%s: %v", quote(c.Metrics.Listen), err)
		}
	}
	met.duration("stall_timeout", &c.Metrics.StallTimeout, time.Second, maxInt)
	log := top.sub("log", logKeys)
	log.oneOf("format", &c.Log.Format, logFormatValues, nil)
	log.oneOf("level", &c.Log.Level, logLevelValues, nil)
	top.oneOf("shutdown", &c.Shutdown, shutdownValues, nil)
	top.duration("shutdown_timeout", &c.ShutdownTimeout, 1, maxInt)
	if top.size("max_record_bytes", &c.MaxRecordBytes, 1, maxInt) {
		if need := MemoryForRecord(c.MaxRecordBytes); need > c.Memory.Limit && !mem.bad["limit"] {
			top.fail("max_record_bytes", "%s needs memory.limit of at least %s, got %s; lower max_record_bytes or raise memory.limit",
				formatSize(c.MaxRecordBytes), formatSize(need), formatSize(c.Memory.Limit))
		}
	} else if !top.bad["max_record_bytes"] && !mem.bad["limit"] {
		// Not set: as large as the limit holds, up to 64MiB.
		c.MaxRecordBytes = DefaultMaxRecordBytes(c.Memory.Limit)
	}
	dl := top.sub("dead_letter", deadLetterKeys)
	if dl.str("topic", &c.DeadLetter.Topic) && !topicName.MatchString(c.DeadLetter.Topic) {
		dl.fail("topic", "%s is not a valid topic name (letters, digits, '.', '_', '-'; at most 249)", quote(c.DeadLetter.Topic))
	}
	if dl.str("url", &c.DeadLetter.URL) {
		// Any store's URL: it is opened with the store section's settings.
		if err := checkStoreURL(c.DeadLetter.URL); err != nil {
			dl.fail("url", "%v", err)
		}
	}
	if c.DeadLetter.Topic != "" || c.DeadLetter.URL != "" {
		c.Errors = "dead_letter"
	}
	if top.oneOf("errors", &c.Errors, errorsValues, notYet) && c.Errors == "dead_letter" && c.DeadLetter.Topic == "" && c.DeadLetter.URL == "" {
		top.fail("errors", "dead_letter needs dead_letter.topic or dead_letter.url")
	}
	if c.Format.Envelope != "" && !top.given("table") {
		top.fail("format", "envelope %s: the change events of format.envelope need a table with mode: upsert", c.Format.Envelope)
	}
	if ts := top.optional("table", tableKeys); ts != nil {
		c.Table = d.table(ts, c)
		if c.Format.Envelope != "" && !c.Table.Upsert() {
			top.fail("format", "envelope %s: the change events of format.envelope need table.mode: upsert", c.Format.Envelope)
		}
		// The table's files are read and written by iceberg-go's own IO,
		// which pqsink has for s3://, gs://, abfss:// and file://.
		if strings.HasPrefix(c.Store.URL, "azblob:") {
			top.fail("table", "Iceberg tables on Azure need the abfss://CONTAINER@ACCOUNT.dfs.core.windows.net/PREFIX form of store.url, which Iceberg readers understand")
		}
	}
}

var topicName = regexp.MustCompile(`^[a-zA-Z0-9._-]{1,249}$`)

func (d *decoder) kafka(s *section, k *Kafka) {
	if s.list("brokers", &k.Brokers, true) {
		for _, b := range k.Brokers {
			if err := checkHostPort(b, false); err != nil {
				s.fail("brokers", "broker %s: %v", quote(b), err)
			}
		}
	}
	s.require("brokers")
	s.str("group", &k.Group)
	s.require("group")
	if s.list("topics", &k.Topics, true) {
		seen := map[string]bool{}
		for _, t := range k.Topics {
			switch {
			case !topicName.MatchString(t) || t == "." || t == "..":
				s.fail("topics", "%s is not a Kafka topic name (letters, digits, '.', '_' and '-', at most 249)", quote(t))
			case seen[t]:
				s.fail("topics", "%s is listed twice", quote(t))
			}
			seen[t] = true
		}
	}
	if s.str("topic_regex", &k.TopicRegex) {
		if _, err := regexp.Compile(k.TopicRegex); err != nil {
			s.fail("topic_regex", "%s does not compile: %v", quote(k.TopicRegex), strings.TrimPrefix(err.Error(), "error parsing regexp: "))
		}
	}
	switch {
	case s.has("topics") && s.has("topic_regex"):
		s.fail("topic_regex", "set either kafka.topics or kafka.topic_regex, not both")
	case !s.has("topics") && !s.has("topic_regex") && !s.bad["topics"] && !s.bad["topic_regex"] && !s.broken:
		s.d.errorf(0, s.key("topics"), "required: set kafka.topics or kafka.topic_regex")
	}
	s.oneOf("start", &k.Start, startValues, nil)
	s.str("client_id", &k.ClientID)
	s.str("instance_id", &k.InstanceID)

	if sasl := s.optional("sasl", saslKeys); sasl != nil {
		k.SASL = &SASL{}
		sasl.oneOf("mechanism", &k.SASL.Mechanism, mechanismValues, nil)
		sasl.require("mechanism")
		sasl.str("username", &k.SASL.Username)
		sasl.require("username")
		sasl.secret("password", &k.SASL.Password)
		sasl.require("password")
	}
	if tls := s.optional("tls", tlsKeys); tls != nil {
		k.TLS = &TLS{}
		d.file(tls, "ca_file", &k.TLS.CAFile)
		d.file(tls, "cert_file", &k.TLS.CertFile)
		d.file(tls, "key_file", &k.TLS.KeyFile)
		switch {
		case tls.has("cert_file") && !tls.has("key_file") && !tls.bad["key_file"]:
			tls.fail("cert_file", "set kafka.tls.key_file too: a client certificate needs its key")
		case tls.has("key_file") && !tls.has("cert_file") && !tls.bad["cert_file"]:
			tls.fail("key_file", "set kafka.tls.cert_file too: a client key needs its certificate")
		}
		tls.boolean("insecure_skip_verify", &k.TLS.InsecureSkipVerify)
		tls.str("server_name", &k.TLS.ServerName)
	}

	f := s.sub("fetch", fetchKeys)
	f.size("min_bytes", &k.Fetch.MinBytes, 1, math.MaxInt32)
	if f.size("max_bytes", &k.Fetch.MaxBytes, 1, math.MaxInt32) || f.has("min_bytes") {
		if k.Fetch.MaxBytes < k.Fetch.MinBytes && !f.bad["max_bytes"] {
			f.fail("max_bytes", "%s is less than kafka.fetch.min_bytes (%s)", formatSize(k.Fetch.MaxBytes), formatSize(k.Fetch.MinBytes))
		}
	}
	f.duration("max_wait", &k.Fetch.MaxWait, 1, maxInt)

	s.duration("session_timeout", &k.SessionTimeout, 1, maxInt)
	s.duration("heartbeat_interval", &k.HeartbeatInterval, 1, maxInt)
	if k.HeartbeatInterval >= k.SessionTimeout && !s.bad["heartbeat_interval"] && !s.bad["session_timeout"] {
		key := "heartbeat_interval"
		if !s.has(key) {
			key = "session_timeout"
		}
		s.fail(key, "kafka.heartbeat_interval (%s) must be less than kafka.session_timeout (%s)",
			formatDuration(k.HeartbeatInterval), formatDuration(k.SessionTimeout))
	}
	s.duration("rebalance_timeout", &k.RebalanceTimeout, 1, maxInt)
	s.duration("commit_timeout", &k.CommitTimeout, 1, maxInt)
	s.duration("topic_refresh", &k.TopicRefresh, 1, maxInt)
}

// file reads a path that must name an existing regular file, resolved
// against the config's directory.
func (d *decoder) file(s *section, name string, dst *string) bool {
	var p string
	if !s.str(name, &p) {
		return false
	}
	*dst = d.resolve(p)
	if err := checkFile(*dst); err != nil {
		s.fail(name, "%v", err)
		return false
	}
	return true
}

func (d *decoder) resolve(p string) string {
	if filepath.IsAbs(p) || d.dir == "" {
		return p
	}
	return filepath.Join(d.dir, p)
}

func checkFile(p string) error {
	fi, err := os.Stat(p)
	switch {
	case os.IsNotExist(err):
		return fmt.Errorf("%s does not exist", quote(p))
	case err != nil:
		return err
	case fi.IsDir():
		return fmt.Errorf("%s is a directory, not a file", quote(p))
	}
	return nil
}

// checkHostPort checks a host:port. The host may be empty only for a
// listen address, and the port may then be 0.
func checkHostPort(hp string, listen bool) error {
	host, port, err := net.SplitHostPort(hp)
	if err != nil {
		return fmt.Errorf("want host:port")
	}
	if host == "" && !listen {
		return fmt.Errorf("want host:port, the host is missing")
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 0 || n > 65535 || n == 0 && !listen {
		return fmt.Errorf("port %s is not a number from 1 to 65535", quote(port))
	}
	return nil
}

func (d *decoder) store(s *section, st *Store) {
	if s.str("url", &st.URL) {
		if err := checkStoreURL(st.URL); err != nil {
			s.fail("url", "%v", err)
		}
	}
	s.require("url")
	if s.str("endpoint", &st.Endpoint) {
		u, err := url.Parse(st.Endpoint)
		switch {
		case err != nil || u.Host == "" || u.Scheme != "http" && u.Scheme != "https":
			s.fail("endpoint", "want a URL like http://127.0.0.1:9000 or https://s3.example.com")
		case u.User != nil:
			s.fail("endpoint", "must not contain credentials; use store.access_key and store.secret_key")
		}
	}
	s.str("region", &st.Region)
	s.boolean("path_style", &st.PathStyle)
	s.str("access_key", &st.AccessKey)
	s.secret("secret_key", &st.SecretKey)
	s.secret("session_token", &st.SessionToken)
	switch {
	case s.has("access_key") && !s.has("secret_key") && !s.bad["secret_key"]:
		s.fail("access_key", "set store.secret_key too, or neither for the default credential chain")
	case s.has("secret_key") && !s.has("access_key") && !s.bad["access_key"]:
		s.fail("secret_key", "set store.access_key too, or neither for the default credential chain")
	case s.has("session_token") && !s.has("access_key") && !s.bad["access_key"]:
		s.fail("session_token", "needs store.access_key and store.secret_key")
	}
	s.size("part_size", &st.PartSize, 5*mib, 5*gib)
	s.boolean("conditional_writes", &st.ConditionalWrites)
	s.oneOf("sse", &st.SSE, sseValues, nil)
	if s.str("sse_kms_key_id", &st.SSEKMSKeyID) && st.SSE != "aws:kms" && !s.bad["sse"] {
		s.fail("sse_kms_key_id", "only used with store.sse: aws:kms")
	}
	s.duration("stale_upload_age", &st.StaleUploadAge, 1, maxInt)
	s.intValue("max_retries", &st.MaxRetries, 0, 1000)
	s.duration("max_retry_wait", &st.MaxRetryWait, time.Millisecond, 10*time.Minute)
	if strings.HasPrefix(st.URL, "gs:") {
		// GCS takes its credentials from the Application Default
		// Credentials, always honours the create-if-absent precondition,
		// and encrypts with keys of its own: these S3 keys would be
		// ignored, so they are refused.
		for _, key := range gcsRefusedKeys {
			if s.has(key) {
				s.fail(key, "applies only to s3:// stores; a gs:// store takes credentials from the Application Default Credentials (GOOGLE_APPLICATION_CREDENTIALS)")
			}
		}
	}
	if strings.HasPrefix(st.URL, "azblob:") || strings.HasPrefix(st.URL, "abfss:") {
		// Azure takes its credentials from the environment, always
		// honours If-None-Match, and encrypts with keys of its own.
		for _, key := range gcsRefusedKeys {
			if s.has(key) {
				s.fail(key, "applies only to s3:// stores; an Azure store takes credentials from AZURE_STORAGE_ACCOUNT and AZURE_STORAGE_KEY, AZURE_STORAGE_SAS_TOKEN, or the default Azure credential chain")
			}
		}
	}
}

// gcsRefusedKeys are the store keys that a gs://, azblob:// or abfss://
// URL does not take.
var gcsRefusedKeys = []string{"region", "path_style", "access_key", "secret_key", "session_token",
	"conditional_writes", "sse", "sse_kms_key_id"}

// storeURLForms lists the forms of store.url, for errors.
const storeURLForms = "s3://bucket[/prefix], gs://bucket[/prefix], azblob://container[/prefix], abfss://container@account.dfs.core.windows.net[/prefix] or file:///absolute/dir"

// checkStoreURL checks s3://bucket[/prefix], gs://bucket[/prefix],
// azblob://container[/prefix],
// abfss://container@account.dfs.core.windows.net[/prefix] and
// file:///abs/dir. Its errors never quote the URL, which could hold
// credentials.
func checkStoreURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("not a valid URL; want %s", storeURLForms)
	}
	if u.Scheme == "abfss" {
		// The user part is the container.
		_, hasPassword := u.User.Password()
		account, suffix, isDFS := strings.Cut(u.Hostname(), ".dfs.")
		switch {
		case u.User == nil || u.User.Username() == "" || hasPassword:
			return fmt.Errorf("want abfss://container@account.dfs.core.windows.net[/prefix]: the container goes before the @, and nothing else")
		case !isDFS || account == "" || suffix == "" || u.Port() != "":
			return fmt.Errorf("want abfss://container@account.dfs.core.windows.net[/prefix]: the host is not an account's dfs endpoint")
		case u.RawQuery != "" || u.Fragment != "":
			return fmt.Errorf("must not have a query or fragment; want %s", storeURLForms)
		case strings.Contains(u.Path, "//") || slices.Contains(strings.Split(u.Path, "/"), ".."):
			return fmt.Errorf("the prefix must not contain empty or \"..\" segments")
		}
		return nil
	}
	if u.User != nil {
		return fmt.Errorf("must not contain credentials; use store.access_key and store.secret_key")
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("must not have a query or fragment; want %s", storeURLForms)
	}
	switch u.Scheme {
	case "s3":
		if u.Host == "" {
			return fmt.Errorf("want s3://bucket[/prefix]: the bucket is missing")
		}
		if strings.Contains(u.Host, ":") {
			return fmt.Errorf("want s3://bucket[/prefix]: a bucket has no port; the server goes in store.endpoint")
		}
		if strings.Contains(u.Path, "//") || slices.Contains(strings.Split(u.Path, "/"), "..") {
			return fmt.Errorf("the prefix must not contain empty or \"..\" segments")
		}
	case "gs":
		if u.Host == "" {
			return fmt.Errorf("want gs://bucket[/prefix]: the bucket is missing")
		}
		if strings.Contains(u.Host, ":") {
			return fmt.Errorf("want gs://bucket[/prefix]: a bucket has no port; an emulator goes in store.endpoint")
		}
		if strings.Contains(u.Path, "//") || slices.Contains(strings.Split(u.Path, "/"), "..") {
			return fmt.Errorf("the prefix must not contain empty or \"..\" segments")
		}
	case "azblob":
		if u.Host == "" {
			return fmt.Errorf("want azblob://container[/prefix]: the container is missing")
		}
		if strings.Contains(u.Host, ":") {
			return fmt.Errorf("want azblob://container[/prefix]: a container has no port; the account's URL goes in store.endpoint")
		}
		if strings.Contains(u.Path, "//") || slices.Contains(strings.Split(u.Path, "/"), "..") {
			return fmt.Errorf("the prefix must not contain empty or \"..\" segments")
		}
	case "file":
		if u.Opaque != "" || u.Host != "" || !strings.HasPrefix(u.Path, "/") {
			return fmt.Errorf("a file URL needs an absolute path, like file:///var/lib/pqsink/out")
		}
	default:
		return fmt.Errorf("scheme %s is not one of s3, gs, azblob, abfss, file", quote(u.Scheme))
	}
	return nil
}

// registry reads format.registry.
func (d *decoder) registry(s *section) *Registry {
	r := &Registry{CacheSize: 1000, Timeout: 10 * time.Second}
	if s.str("url", &r.URL) {
		u, err := url.Parse(r.URL)
		switch {
		case err != nil || u.Host == "" || u.Scheme != "http" && u.Scheme != "https":
			s.fail("url", "want a URL like http://127.0.0.1:8081 or https://registry.example.com")
		case u.User != nil:
			s.fail("url", "must not contain credentials; use format.registry.username and format.registry.password")
		case u.RawQuery != "" || u.Fragment != "":
			s.fail("url", "must not have a query or fragment")
		}
	}
	s.require("url")
	s.str("username", &r.Username)
	s.secret("password", &r.Password)
	if s.has("password") && !s.has("username") && !s.bad["username"] {
		s.fail("password", "set format.registry.username too")
	}
	d.file(s, "ca_file", &r.CAFile)
	s.intValue("cache_size", &r.CacheSize, 1, math.MaxInt32)
	s.duration("timeout", &r.Timeout, 1, maxInt)
	return r
}

func (d *decoder) rotate(s *section, r *Rotate) {
	s.integer("records", &r.Records, math.MinInt64, maxInt)
	s.size("bytes", &r.Bytes, 0, maxInt)
	s.duration("interval", &r.Interval, math.MinInt64, maxInt)
	s.duration("schedule", &r.Schedule, math.MinInt64, maxInt)
	if r.Records < 0 {
		s.fail("records", "must be positive, or 0 to turn it off")
	}
	if r.Interval < 0 {
		s.fail("interval", "must be positive, or 0 to turn it off")
	}
	const day = 24 * time.Hour
	switch sch := r.Schedule; {
	case sch < 0:
		s.fail("schedule", "must be positive, or 0 to turn it off")
	case sch == 0:
	case sch < time.Second:
		s.fail("schedule", "must be at least 1s")
	case sch < day && day%sch != 0:
		s.fail("schedule", "%s does not divide 24h evenly; use a period like 15m, 1h, 6h or 24h", formatDuration(sch))
	case sch >= day && sch%day != 0:
		s.fail("schedule", "%s is over a day but not a whole number of days", formatDuration(sch))
	}
	if r.Records == 0 && r.Bytes == 0 && r.Interval == 0 && r.Schedule == 0 && !s.broken {
		s.d.errorf(s.line, s.path, "every limit is 0, so no file would ever be closed; set records, bytes, interval or schedule")
	}
}

func (d *decoder) parquet(s *section, p *Parquet) {
	if s.str("codec", &p.Codec) {
		if c, err := checkCodec(p.Codec); err != nil {
			s.fail("codec", "%v", err)
		} else {
			p.Codec = c
		}
	}
	s.size("row_group_bytes", &p.RowGroupBytes, 1*kib, maxInt)
	s.size("page_bytes", &p.PageBytes, 1*kib, 1*gib)
	if p.PageBytes > p.RowGroupBytes && !s.bad["page_bytes"] && !s.bad["row_group_bytes"] {
		s.fail("page_bytes", "%s is more than parquet.row_group_bytes (%s)", formatSize(p.PageBytes), formatSize(p.RowGroupBytes))
	}
	s.intValue("page_version", &p.PageVersion, 1, 2)
	s.boolean("dictionary", &p.Dictionary)
	s.boolean("page_index", &p.PageIndex)
	s.boolean("checksums", &p.Checksums)
	if s.list("bloom_filters", &p.BloomFilters, false) {
		seen := map[string]bool{}
		for _, b := range p.BloomFilters {
			col, err := checkBloom(b)
			switch {
			case err != nil:
				s.fail("bloom_filters", "%s: %v", quote(b), err)
			case seen[col]:
				s.fail("bloom_filters", "column %s is listed twice", quote(col))
			}
			seen[col] = true
		}
	}
	s.intValue("stats_truncate", &p.StatsTruncate, 0, math.MaxInt32)
}
