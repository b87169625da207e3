package config

import (
	"fmt"
	"math"
	"net/url"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Table is the table section: the Iceberg table the sink's files are
// committed to, on top of the files under store.url (the warehouse).
type Table struct {
	// Format is the table format (format); iceberg is the only one.
	// Required; no default.
	Format string
	// Catalog is where the table is registered (catalog).
	// Required; see Catalog for the defaults of its optional keys.
	Catalog Catalog
	// Namespace is the namespace holding the tables (namespace); dots
	// separate the levels of a nested namespace.
	// Required; no default.
	Namespace string
	// Name is the table name, a template whose {topic} is the record's
	// topic (name).
	// Defaults to "{topic}", one table per topic.
	Name string
	// CommitInterval is how often a member commits the files it uploaded
	// to the table, one snapshot each time (commit_interval). Each commit
	// writes a manifest, a manifest list and a metadata file, and the Kafka
	// offsets follow it, so it is also the delay before records count as
	// consumed.
	// Defaults to what DefaultFreshnessTarget derives (1s), or 30s when
	// rotate.interval or rotate.schedule is given.
	CommitInterval time.Duration
	// FreshnessTarget is how soon after its production a record should
	// be in the table (freshness_target): when set, CommitInterval and
	// the rotate section's Interval are derived from it (see
	// FreshnessCadence), unless given themselves.
	// Defaults to DefaultFreshnessTarget when none of freshness_target,
	// commit_interval, rotate.interval and rotate.schedule is given;
	// otherwise 0: none.
	FreshnessTarget time.Duration

	// FreshnessFromRead is freshness_from: read (the other value is
	// timestamp): the freshness metrics count a record's age from when
	// the sink read it, not from its Kafka timestamp, for producers whose
	// clocks are not trusted.
	// Defaults to false: the Kafka timestamp.
	FreshnessFromRead bool
	// PartitionBy is the partition spec: Iceberg transforms of columns,
	// each "transform(column.path)" with transform one of identity, year,
	// month, day, hour, bucket[N] or truncate[W] (partition_by).
	// Defaults to none (unpartitioned); see PartitionBySet.
	PartitionBy []PartitionField
	// PartitionBySet says that partition_by was given (an empty list
	// included). Without it, a table that exists keeps its own spec and
	// the sink follows it; one pqsink creates is unpartitioned.
	PartitionBySet bool
	// FormatVersion is the Iceberg format version of a table created by
	// pqsink, 2 or 3 (format_version); 3 is needed for format.type
	// variant (Iceberg's variant type).
	// Defaults to 2, or 3 when format.type is variant.
	FormatVersion int
	// TimestampMicros is timestamp_precision: micros (the other value is
	// nanos): with format.type protobuf, a google.protobuf.Timestamp is a
	// microsecond timestamptz of the table (Parquet TIMESTAMP(MICROS)),
	// which format version 2 has, its nanoseconds below the microsecond
	// cut (and counted); with nanos it is a timestamptz_ns, which needs
	// format version 3. With format.type avro, a timestamp-nanos or
	// local-timestamp-nanos is cut alike, and with format.type json a
	// TIMESTAMP(NANOS) column of format.schema_file. Only format.type
	// protobuf, avro and json take micros.
	// Defaults to false: nanos.
	TimestampMicros bool
	// Maintenance is the upkeep of the tables inside the daemon
	// (maintenance); nil is off.
	// Defaults to DefaultMaintenance when the default freshness target
	// applies (DefaultFreshnessTarget), else to nil; maintenance.enabled
	// false turns it off.
	Maintenance *Maintenance
	// Mode is append (every record a row) or upsert (one row per key,
	// the current value of the key's last record; a tombstone or a
	// Debezium delete removes it) (mode). Upsert needs Key and the
	// envelope: its rows are found by their _kafka.offset.
	// Defaults to "append".
	Mode string
	// Key are the fields that identify a row of an upsert table, in
	// order: top-level, required, primitive fields of the records'
	// schema (key); required with mode upsert, refused otherwise. The
	// format checks them against its schema (format.Keyer).
	// Defaults to none.
	Key []string
	// MissingRows is what an upsert table's commit does when a row its
	// key index names is in no data file (another engine removed it):
	// fail stops the partition, skip counts the row as deleted already
	// (missing_rows); upsert only.
	// Defaults to "fail".
	MissingRows string
}

// The values of table.missing_rows.
const (
	MissingRowsFail = "fail"
	MissingRowsSkip = "skip"
)

// The values of table.mode.
const (
	ModeAppend = "append"
	ModeUpsert = "upsert"
)

// Upsert reports whether the table is an upsert table (mode: upsert).
func (t *Table) Upsert() bool { return t != nil && t.Mode == ModeUpsert }

// Catalog is the table.catalog section.
type Catalog struct {
	// Type is sql (a database with the tables of Iceberg's JDBC catalog),
	// rest (the Iceberg REST catalog protocol) or glue (the AWS Glue Data
	// Catalog, which Athena reads) (type).
	// Required; no default.
	Type string
	// URI is, for sql, sqlite:///absolute/file.db, sqlite:relative/file.db
	// (resolved against Config.Dir) or postgres://user:password@host:port/db;
	// for rest, the catalog's http(s) base URL (uri). A password in it is a
	// secret: it is never printed. Not used by glue.
	// Required for sql and rest; no default.
	URI Secret
	// Name is the catalog's name, the catalog_name column of the SQL
	// catalog's tables (name).
	// Defaults to "pqsink".
	Name string
	// Warehouse is the warehouse the REST catalog is asked for (warehouse);
	// rest only. For sql, the warehouse is store.url.
	// Defaults to "".
	Warehouse string
	// Credential is the OAuth2 client credential, CLIENT_ID:CLIENT_SECRET
	// (or the secret alone), exchanged for a token (credential); rest only,
	// not with Token.
	// Defaults to "".
	Credential Secret
	// Token is a bearer token (token); rest only, not with Credential.
	// Defaults to "".
	Token Secret
	// SigV4 signs every request to the REST catalog with AWS Signature
	// Version 4, for Region and SigningName, with credentials from the AWS
	// SDK's default chain, never from the config (sigv4); rest only, not
	// with Credential or Token. It is how AWS Glue's Iceberg REST endpoint
	// and Amazon S3 Tables' authenticate.
	// Defaults to false.
	SigV4 bool
	// SigningName is the AWS service name the requests are signed for
	// (signing_name): glue for Glue's Iceberg REST endpoint, s3tables for
	// S3 Tables'; rest with SigV4 only, and required there.
	// No default.
	SigningName string
	// Region is the AWS region of the Glue catalog, or the region a REST
	// catalog's requests are signed for (region); glue, and rest with
	// SigV4.
	// Defaults to "": the AWS SDK's, from AWS_REGION or the shared config.
	Region string
	// Endpoint is the http(s) URL of a Glue-compatible endpoint in place
	// of AWS's (endpoint); glue only.
	// Defaults to "": AWS's endpoint of the region.
	Endpoint string
	// CatalogID is the AWS account id whose Glue Data Catalog holds the
	// tables (catalog_id); glue only.
	// Defaults to "": the account of the credentials.
	CatalogID string
}

// PartitionField is one entry of table.partition_by: Transform of the
// column at the dotted path Column.
type PartitionField struct {
	// Transform is identity, year, month, day, hour, bucket or truncate.
	Transform string
	// Param is N of bucket[N] and W of truncate[W]; 0 otherwise.
	Param int
	// Column is the dotted path of the source column, e.g. _kafka.timestamp.
	Column string
}

// String writes the field as partition_by takes it, e.g. "bucket[16](id)".
func (p PartitionField) String() string {
	t := p.Transform
	if p.Transform == "bucket" || p.Transform == "truncate" {
		t += "[" + strconv.Itoa(p.Param) + "]"
	}
	return t + "(" + p.Column + ")"
}

// TableName returns the name of topic's table: Name with {topic}
// replaced.
func (t *Table) TableName(topic string) string {
	return strings.ReplaceAll(t.Name, "{topic}", topic)
}

// The keys of the table section and its catalog.
var (
	tableKeys   = []string{"format", "catalog", "namespace", "name", "commit_interval", "freshness_target", "freshness_from", "partition_by", "format_version", "timestamp_precision", "maintenance", "mode", "key", "missing_rows"}
	catalogKeys = []string{"type", "uri", "name", "warehouse", "credential", "token", "sigv4", "signing_name", "region", "endpoint", "catalog_id"}
)

var (
	tableFormatValues = []string{"iceberg"}
	catalogTypeValues = []string{"sql", "rest", "glue"}
	transformNames    = []string{"identity", "year", "month", "day", "hour", "bucket", "truncate"}
	precisionValues   = []string{"nanos", "micros"}
	freshnessValues   = []string{"timestamp", "read"}
	tableModeValues   = []string{ModeAppend, ModeUpsert}
	missingRowsValues = []string{MissingRowsFail, MissingRowsSkip}
)

// table reads the table section.
func (d *decoder) table(s *section, c *Config) *Table {
	typeSpec := specOf(c.Format.Type)
	t := &Table{Name: "{topic}", CommitInterval: 30 * time.Second, FormatVersion: max(2, typeSpec.tableVersion), Mode: ModeAppend}
	s.oneOf("format", &t.Format, tableFormatValues, nil)
	s.require("format")
	if cat := s.sub("catalog", catalogKeys); cat != nil {
		d.catalog(cat, &t.Catalog)
	}
	if s.str("namespace", &t.Namespace) {
		for part := range strings.SplitSeq(t.Namespace, ".") {
			if part == "" {
				s.fail("namespace", "%s has an empty level; want a name like kafka or lake.raw", quote(t.Namespace))
				break
			}
		}
	}
	s.require("namespace")
	if t.Catalog.Type == "glue" && strings.Contains(t.Namespace, ".") {
		s.fail("namespace", "%s: a Glue catalog's namespace is one database; want a name like kafka", quote(t.Namespace))
	}
	if s.str("name", &t.Name) {
		rest := strings.ReplaceAll(t.Name, "{topic}", "")
		needTopic := c.Kafka.TopicRegex != "" || len(c.Kafka.Topics) > 1
		switch {
		case strings.ContainsAny(rest, "{}"):
			s.fail("name", "%s: {topic} is the only placeholder", quote(t.Name))
		case strings.ContainsAny(rest, "/\\"):
			s.fail("name", "%s: a table name cannot contain / or \\", quote(t.Name))
		case needTopic && !strings.Contains(t.Name, "{topic}"):
			// Several topics into one table is legal in Iceberg, but their
			// schemas would have to agree; say so rather than guess.
			s.fail("name", "%s has no {topic}, but several topics are consumed; one table per topic needs {topic}", quote(t.Name))
		}
	}
	commitSet := s.duration("commit_interval", &t.CommitInterval, time.Second, maxInt)
	defaultCadence := false
	if s.duration("freshness_target", &t.FreshnessTarget, MinFreshnessTarget, maxInt) {
		t.CommitInterval, c.Rotate.Interval = FreshnessCadence(t.FreshnessTarget, t.CommitInterval, c.Rotate.Interval, commitSet, d.rotateIntervalSet)
	} else if !s.given("freshness_target") && !commitSet && !s.given("commit_interval") && !d.rotateIntervalSet && !d.rotateScheduleSet {
		// Nothing says how fresh the table should be: the default target.
		defaultCadence = true
		t.FreshnessTarget = DefaultFreshnessTarget
		t.CommitInterval, c.Rotate.Interval = FreshnessCadence(t.FreshnessTarget, t.CommitInterval, c.Rotate.Interval, false, false)
	}
	var from string
	if s.oneOf("freshness_from", &from, freshnessValues, nil) {
		t.FreshnessFromRead = from == "read"
	}
	var specs []string
	// Given, even as [], partition_by is the spec; absent (or null), an
	// existing table keeps its own.
	t.PartitionBySet = !isNull(deref(s.values["partition_by"]))
	if s.list("partition_by", &specs, false) {
		seen := map[string]bool{}
		for _, spec := range specs {
			p, err := parsePartitionField(spec)
			switch {
			case err != nil:
				s.fail("partition_by", "%s: %v", quote(spec), err)
				continue
			case seen[p.String()]:
				s.fail("partition_by", "%s is listed twice", quote(spec))
			case strings.HasPrefix(p.Column, "_kafka.") && !c.Envelope:
				s.fail("partition_by", "%s: the _kafka columns exist only with envelope: true", quote(spec))
			}
			seen[p.String()] = true
			t.PartitionBy = append(t.PartitionBy, p)
		}
	}
	if s.intValue("format_version", &t.FormatVersion, 2, 3) && t.FormatVersion < typeSpec.tableVersion {
		s.fail("format_version", "%s", typeSpec.tableVersionWhy)
	}
	var precision string
	if s.oneOf("timestamp_precision", &precision, precisionValues, nil) && precision == "micros" {
		t.TimestampMicros = true
		if !typeSpec.nanos {
			s.fail("timestamp_precision", "micros is for format.type protobuf (its google.protobuf.Timestamp fields), avro (its timestamp-nanos and local-timestamp-nanos) and json (format.schema_file's TIMESTAMP(NANOS) columns); format.type is %s", c.Format.Type)
		}
	}
	if ms := s.optional("maintenance", maintenanceKeys); ms != nil {
		t.Maintenance = d.maintenance(ms, c, t)
	} else if defaultCadence {
		// The default cadence makes a file a partition every few seconds:
		// it comes with the upkeep that folds them into larger ones.
		m := DefaultMaintenance()
		t.Maintenance = &m
	}
	d.tableMode(s, c, t)
	return t
}

// tableMode reads table.mode and table.key, and checks what an upsert
// table needs of the rest of the config. The key fields are checked
// against the records' schema by the format, when the sink opens it
// (also by pqsink run --check).
func (d *decoder) tableMode(s *section, c *Config, t *Table) {
	s.oneOf("mode", &t.Mode, tableModeValues, nil)
	keySet := s.list("key", &t.Key, true)
	if keySet {
		seen := map[string]bool{}
		for _, k := range t.Key {
			switch {
			case k == "":
				s.fail("key", "an empty field name")
			case seen[k]:
				s.fail("key", "%s is listed twice", quote(k))
			}
			seen[k] = true
		}
	}
	if !t.Upsert() {
		for _, k := range []string{"key", "missing_rows"} {
			if s.given(k) {
				s.fail(k, "only with mode: upsert (the table is mode %s)", t.Mode)
			}
		}
		return
	}
	t.MissingRows = MissingRowsFail
	s.oneOf("missing_rows", &t.MissingRows, missingRowsValues, nil)
	if !keySet || len(t.Key) == 0 {
		s.fail("key", "mode: upsert needs the fields that identify a row, like key: [id]")
	}
	if !c.Envelope {
		s.fail("mode", "upsert needs envelope: true: a row is found by its _kafka.offset column when a later record replaces or deletes it")
	}
}

// catalog reads table.catalog.
func (d *decoder) catalog(s *section, c *Catalog) {
	c.Name = "pqsink"
	s.oneOf("type", &c.Type, catalogTypeValues, nil)
	s.require("type")
	s.str("name", &c.Name)
	// Keys of the other catalog types are refused, not ignored.
	only := map[string][]string{
		"sql":  {"warehouse", "credential", "token", "sigv4", "signing_name", "region", "endpoint", "catalog_id"},
		"rest": {"endpoint", "catalog_id"},
		"glue": {"uri", "warehouse", "credential", "token", "sigv4", "signing_name"},
	}
	for _, k := range only[c.Type] {
		if s.given(k) {
			hint := ""
			if c.Type == "glue" && (k == "sigv4" || k == "signing_name") {
				hint = "; a glue catalog always signs its requests with SigV4 (sigv4 is for a rest catalog)"
			}
			s.fail(k, "not used when table.catalog.type is %s%s", c.Type, hint)
		}
	}
	switch c.Type {
	case "glue":
		d.glueCatalog(s, c)
		return
	case "":
		return // the type is reported missing or wrong
	}
	var uri string
	if s.str("uri", &uri) {
		if resolved, err := d.catalogURI(c.Type, uri); err != nil {
			s.fail("uri", "%v", err)
		} else {
			c.URI = Secret(resolved)
		}
	}
	s.require("uri")
	if c.Type == "sql" {
		return
	}
	s.str("warehouse", &c.Warehouse)
	s.secret("credential", &c.Credential)
	s.secret("token", &c.Token)
	if s.has("credential") && s.has("token") {
		s.fail("token", "set either table.catalog.credential or table.catalog.token, not both")
	}
	d.sigV4(s, c)
}

// sigV4 reads the keys of a rest catalog's SigV4 signing. Its credentials
// are the AWS SDK's default chain's, as a glue catalog's; the region, when
// not given, is the SDK's too, and its absence is found when the catalog
// is opened.
func (d *decoder) sigV4(s *section, c *Catalog) {
	s.boolean("sigv4", &c.SigV4)
	if !c.SigV4 {
		for _, k := range []string{"signing_name", "region"} {
			if s.given(k) {
				s.fail(k, "only with table.catalog.sigv4: true, which signs the requests with AWS credentials")
			}
		}
		return
	}
	for _, k := range []string{"credential", "token"} {
		if s.has(k) {
			s.fail(k, "not with table.catalog.sigv4: the requests are signed with AWS credentials from the AWS SDK's default chain instead")
		}
	}
	if s.str("signing_name", &c.SigningName) && !serviceNamePattern.MatchString(c.SigningName) {
		s.fail("signing_name", "%s is not an AWS service name like glue or s3tables", quote(c.SigningName))
	}
	s.require("signing_name")
	if s.str("region", &c.Region) && !regionPattern.MatchString(c.Region) {
		s.fail("region", "%s is not an AWS region name like eu-west-1", quote(c.Region))
	}
}

// glueCatalog reads the keys of a glue catalog. Its credentials are the
// AWS SDK's default chain's, never the config's.
func (d *decoder) glueCatalog(s *section, c *Catalog) {
	if s.str("region", &c.Region) && !regionPattern.MatchString(c.Region) {
		s.fail("region", "%s is not an AWS region name like eu-west-1", quote(c.Region))
	}
	if s.str("endpoint", &c.Endpoint) {
		u, err := url.Parse(c.Endpoint)
		switch {
		case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
			s.fail("endpoint", "%s: want the http(s) URL of a Glue endpoint, like https://glue.eu-west-1.amazonaws.com", quote(c.Endpoint))
		case u.User != nil:
			s.fail("endpoint", "must not contain credentials; the AWS SDK's default chain provides them")
		}
	}
	if s.str("catalog_id", &c.CatalogID) && !accountPattern.MatchString(c.CatalogID) {
		s.fail("catalog_id", "%s is not an AWS account id (12 digits)", quote(c.CatalogID))
	}
}

var (
	regionPattern      = regexp.MustCompile(`^[a-z]{2}(-[a-z]+)+-[0-9]+$`)
	accountPattern     = regexp.MustCompile(`^[0-9]{12}$`)
	serviceNamePattern = regexp.MustCompile(`^[a-z][a-z0-9-]*$`)
)

// catalogURI checks the catalog URI for the catalog type and resolves a
// relative SQLite path. Its errors never quote the URI, which may hold a
// password.
func (d *decoder) catalogURI(typ, raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("not a valid URL")
	}
	switch typ {
	case "rest":
		if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
			return "", fmt.Errorf("want the REST catalog's URL, like https://catalog.example.com/api/catalog")
		}
		if u.User != nil {
			return "", fmt.Errorf("must not contain credentials; use table.catalog.credential or table.catalog.token")
		}
	case "sql":
		switch u.Scheme {
		case "sqlite":
			p := u.Path
			if u.Opaque != "" {
				p = u.Opaque
			}
			if p == "" || u.Host != "" {
				return "", fmt.Errorf("want sqlite:///absolute/file.db or sqlite:relative/file.db")
			}
			if u.RawQuery != "" {
				return "", fmt.Errorf("a sqlite URI takes no query; pqsink sets the connection options")
			}
			return "sqlite://" + filepath.ToSlash(d.resolve(filepath.FromSlash(p))), nil
		case "postgres", "postgresql":
			if u.Host == "" || strings.Trim(u.Path, "/") == "" {
				return "", fmt.Errorf("want postgres://user:password@host:port/database")
			}
			if err := CheckPostgresURI(raw); err != nil {
				return "", err
			}
		default:
			return "", fmt.Errorf("scheme %s is not one of sqlite, postgres", quote(u.Scheme))
		}
	}
	return raw, nil
}

// ParsePartitionField reads a partition field as partition_by writes it,
// "transform(column)": day(_kafka.timestamp), bucket[16](id).
func ParsePartitionField(s string) (PartitionField, error) { return parsePartitionField(s) }

// parsePartitionField reads "transform(column)".
func parsePartitionField(s string) (PartitionField, error) {
	open := strings.IndexByte(s, '(')
	if open < 0 || !strings.HasSuffix(s, ")") {
		return PartitionField{}, fmt.Errorf("want transform(column), like day(_kafka.timestamp) or bucket[16](id)")
	}
	var p PartitionField
	name, col := strings.TrimSpace(s[:open]), strings.TrimSpace(s[open+1:len(s)-1])
	if i := strings.IndexByte(name, '['); i >= 0 {
		if !strings.HasSuffix(name, "]") {
			return p, fmt.Errorf("want %s[N](column)", name[:i])
		}
		n, err := strconv.Atoi(name[i+1 : len(name)-1])
		if err != nil || n < 1 || n > math.MaxInt32 {
			return p, fmt.Errorf("%s: the width in brackets must be a whole number from 1", name[:i])
		}
		name, p.Param = name[:i], n
	}
	p.Transform = strings.ToLower(name)
	switch p.Transform {
	case "bucket", "truncate":
		if p.Param == 0 {
			return p, fmt.Errorf("%s needs a width: %s[N](column)", p.Transform, p.Transform)
		}
	case "identity", "year", "month", "day", "hour":
		if p.Param != 0 {
			return p, fmt.Errorf("%s takes no width", p.Transform)
		}
	default:
		return p, fmt.Errorf("transform %s is not one of %s", quote(name), strings.Join(transformNames, ", "))
	}
	for part := range strings.SplitSeq(col, ".") {
		if part == "" {
			return p, fmt.Errorf("column %s is not a dotted column path like _kafka.timestamp", quote(col))
		}
	}
	p.Column = col
	return p, nil
}

// FreshnessAllowance is what table.freshness_target leaves for a file's
// upload and its table commit: the tails of pqsink_upload_seconds and
// pqsink_table_commit_seconds against S3 and a SQL catalog.
const FreshnessAllowance = 2 * time.Second

// DefaultFreshnessTarget is table.freshness_target when none of
// freshness_target, commit_interval, rotate.interval and rotate.schedule
// is given: commit_interval 1s and rotate.interval 5s, so that a record is
// in the table within about 8s (10s at p99 at 20,000 records/s into 12
// partitions on two cores), at the cost of a commit a second and a file
// per partition every 5s, which table.maintenance's small-file compaction
// folds into larger ones as they arrive: with this default, maintenance is
// on (with its defaults) unless the maintenance section says otherwise. A sink without a table keeps
// rotate.interval's own default.
const DefaultFreshnessTarget = 8 * time.Second

// MinFreshnessTarget is the shortest table.freshness_target: the
// allowance, a second of rotate.interval and the shortest commit_interval.
const MinFreshnessTarget = FreshnessAllowance + 2*time.Second

// FreshnessCadence derives table.commit_interval and rotate.interval from
// table.freshness_target. A record waits at most rotate.interval for its
// file to close, then the upload, then at most commit_interval for the
// commit: what the target leaves after FreshnessAllowance is shared, a
// quarter (in whole seconds, at least 1s) to commit_interval and the rest
// to rotate.interval. A value given explicitly (commitSet, rotateSet)
// stays, and the other takes what it leaves (at least 1s); with both given
// the target changes neither. The memory budget bounds the open files
// whatever the cadence: when it runs short the sink closes the oldest
// files sooner.
func FreshnessCadence(target, commit, rotate time.Duration, commitSet, rotateSet bool) (time.Duration, time.Duration) {
	spare := target - FreshnessAllowance
	switch {
	case commitSet && rotateSet:
	case commitSet:
		rotate = max(time.Second, spare-commit)
	case rotateSet:
		commit = max(time.Second, (spare - rotate).Truncate(time.Second))
	default:
		commit = max(time.Second, (spare / 4).Truncate(time.Second))
		rotate = spare - commit
	}
	return commit, rotate
}
