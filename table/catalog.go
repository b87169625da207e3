package table

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	icebergio "github.com/apache/iceberg-go/io"
	_ "github.com/apache/iceberg-go/io/gocloud/azure" // abfss:// warehouses
	_ "github.com/apache/iceberg-go/io/gocloud/gcs"   // gs:// warehouses
	_ "github.com/apache/iceberg-go/io/gocloud/s3"    // s3:// warehouses
	itable "github.com/apache/iceberg-go/table"
	"github.com/uptrace/bun/driver/pgdriver"
	_ "modernc.org/sqlite" // the "sqlite" database/sql driver, pure Go

	"github.com/pqsink/pqsink/config"
	"github.com/pqsink/pqsink/objstore"
	"github.com/pqsink/pqsink/schema"
)

// Catalog is an open Iceberg catalog with the sink's table settings: the
// namespace, the partition spec and format version of the tables it
// creates, and the warehouse they live in.
type Catalog struct {
	cat       catalog.Catalog // nil when a read-only open found no catalog yet (absent)
	absent    string          // why the catalog holds nothing yet (OpenReadOnly)
	readOnly  bool
	db        *sql.DB // SQL catalogs only
	cfg       config.Table
	warehouse string // store.url, without a trailing slash
	props     iceberg.Properties
}

// Open connects to the catalog of c.Table: a SQL catalog on SQLite or
// PostgreSQL (its tables are created when absent), a REST catalog (its
// requests signed with AWS SigV4 when table.catalog.sigv4 says so) or the
// AWS Glue Data Catalog. The
// warehouse is c.Store.URL, and the store's S3 settings are handed to
// iceberg-go for the metadata files it writes there.
func Open(ctx context.Context, c *config.Config) (*Catalog, error) {
	return open(ctx, c, false)
}

// OpenReadOnly opens the catalog as Open does, for a check that must
// change nothing: a SQLite catalog is opened read-only, and one whose file
// does not exist is not created; a SQL catalog's tables are never created.
// A catalog that does not exist yet opens as one without tables, and
// Absent says so. Only Check, Tables and Close are for such a catalog.
func OpenReadOnly(ctx context.Context, c *config.Config) (*Catalog, error) {
	return open(ctx, c, true)
}

// Absent says, for a catalog opened by OpenReadOnly, what does not exist
// yet and will be created by the sink's first run; "" when it exists.
func (k *Catalog) Absent() string { return k.absent }

func open(ctx context.Context, c *config.Config, readOnly bool) (*Catalog, error) {
	if c.Table == nil {
		return nil, errors.New("table: the config has no table section")
	}
	t := *c.Table
	k := &Catalog{cfg: t, warehouse: strings.TrimSuffix(c.Store.URL, "/"), props: ioProps(c.Store), readOnly: readOnly}
	var err error
	switch t.Catalog.Type {
	case "sql":
		err = k.openSQL(ctx)
	case "rest":
		err = k.openREST(ctx)
	case "glue":
		err = k.openGlue(ctx)
	default:
		err = fmt.Errorf("catalog type %q is not sql, rest or glue", t.Catalog.Type)
	}
	if err != nil {
		return nil, fmt.Errorf("table: opening the %s catalog %s: %w", t.Catalog.Type, t.Catalog.Name, err)
	}
	return k, nil
}

// ioProps are iceberg-go's settings for the store's S3 bucket.
func ioProps(s config.Store) iceberg.Properties {
	p := iceberg.Properties{}
	set := func(k, v string) {
		if v != "" {
			p[k] = v
		}
	}
	if strings.HasPrefix(s.URL, "abfss://") {
		adlsProps(s, set)
		return p
	}
	if strings.HasPrefix(s.URL, "gs://") {
		gcsProps(s, set)
		return p
	}
	set(icebergio.S3EndpointURL, s.Endpoint)
	set(icebergio.S3Region, s.Region)
	set(icebergio.S3AccessKeyID, s.AccessKey)
	set(icebergio.S3SecretAccessKey, s.SecretKey.Value())
	set(icebergio.S3SessionToken, s.SessionToken.Value())
	if s.Endpoint != "" || s.PathStyle {
		p[icebergio.S3ForceVirtualAddressing] = strconv.FormatBool(!s.PathStyle)
	}
	return p
}

// adlsProps sets the properties of iceberg-go's Azure IO for an abfss://
// warehouse, from what the sink's own Azure store uses (see
// objstore.Open): the shared key of AZURE_STORAGE_ACCOUNT (or the URL's
// account) and AZURE_STORAGE_KEY, else the SAS token of
// AZURE_STORAGE_SAS_TOKEN, else nothing, and iceberg-go takes the default
// Azure credential chain; store.endpoint, the account's URL, gives the
// protocol and the storage domain (for Azurite, http and its host:port,
// which iceberg-go addresses path-style as host:port/ACCOUNT).
func adlsProps(s config.Store, set func(k, v string)) {
	u, err := url.Parse(s.URL)
	if err != nil {
		return // config checked it
	}
	host := u.Hostname()
	account, _, _ := strings.Cut(host, ".")
	if key := os.Getenv(objstore.EnvAzureKey); key != "" {
		name := os.Getenv(objstore.EnvAzureAccount)
		if name == "" {
			name = account
		}
		set(icebergio.ADLSSharedKeyAccountName, name)
		set(icebergio.ADLSSharedKeyAccountKey, key)
	} else if sas := os.Getenv(objstore.EnvAzureSASToken); sas != "" {
		set(icebergio.ADLSSasTokenPrefix+host, strings.TrimPrefix(sas, "?"))
	}
	if s.Endpoint == "" {
		return
	}
	e, err := url.Parse(s.Endpoint)
	if err != nil {
		return
	}
	set(icebergio.ADLSProtocol, e.Scheme)
	domain := e.Host
	if first, rest, ok := strings.Cut(e.Hostname(), "."); ok && first == account && e.Port() == "" {
		domain = rest // https://ACCOUNT.blob.core.windows.net: the domain after the account
	}
	set(icebergio.ADLSEndpoint, domain)
}

// gcsProps sets the properties of iceberg-go's GCS IO for a gs://
// warehouse as the sink's own GCS store takes store.endpoint (see
// objstore.Open): a bare http(s)://host[:port] gets the JSON API's path,
// and a plain http:// one is an emulator, reached without credentials.
// Otherwise iceberg-go finds the Application Default Credentials, or the
// emulator of STORAGE_EMULATOR_HOST, as Google's client does.
func gcsProps(s config.Store, set func(k, v string)) {
	if s.Endpoint == "" {
		return
	}
	e, err := url.Parse(s.Endpoint)
	if err != nil {
		return // config checked it
	}
	if e.Path == "" || e.Path == "/" {
		e.Path = "/storage/v1/"
	}
	set(icebergio.GCSEndpoint, e.String())
	set(icebergio.GCSUseJSONAPI, "true")
	if e.Scheme == "http" {
		set(icebergio.GCSNoAuth, "true")
	}
}

func (k *Catalog) openSQL(ctx context.Context) error {
	uri := k.cfg.Catalog.URI.Value()
	var dialect sqlcat.SupportedDialect
	switch {
	case strings.HasPrefix(uri, "sqlite://"):
		// One connection: SQLite serializes writers anyway, and a second
		// connection of this process would only meet SQLITE_BUSY. The busy
		// timeout makes other processes' writers wait rather than fail.
		path := strings.TrimPrefix(uri, "sqlite://")
		dsn := "file:" + path + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)"
		if k.readOnly {
			if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
				k.absent = "the SQLite catalog " + path + " does not exist yet; the sink creates it"
				return nil
			} else if err != nil {
				return err
			}
			// A reader of a WAL database makes its -wal and -shm files
			// when absent. Absent, the last writer closed the database and
			// its whole content is in the file: read it as immutable,
			// which makes nothing. Present, a writer may be at work: read
			// through them.
			dsn = "file:" + path + "?mode=ro&_pragma=busy_timeout(10000)"
			_, werr := os.Stat(path + "-wal")
			_, serr := os.Stat(path + "-shm")
			if errors.Is(werr, os.ErrNotExist) && errors.Is(serr, os.ErrNotExist) {
				dsn = "file:" + path + "?mode=ro&immutable=1"
			}
		} else if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		db, err := sql.Open("sqlite", dsn)
		if err != nil {
			return err
		}
		db.SetMaxOpenConns(1)
		k.db, dialect = db, sqlcat.SQLite
	case strings.HasPrefix(uri, "postgres://"), strings.HasPrefix(uri, "postgresql://"):
		connector, err := pgConnector(uri)
		if err != nil {
			return err
		}
		k.db, dialect = sql.OpenDB(connector), sqlcat.Postgres
	default:
		return errors.New("the uri is not sqlite:// or postgres://")
	}
	if err := k.db.PingContext(ctx); err != nil {
		k.db.Close()
		return scrub(err, uri)
	}
	props := iceberg.Properties{"warehouse": k.warehouse}
	for key, v := range k.props {
		props[key] = v
	}
	if k.readOnly {
		// iceberg-go creates the catalog's tables unless told not to;
		// a catalog without them holds no table yet.
		props["init_catalog_tables"] = "false"
		exists, err := sqlTablesExist(ctx, k.db, dialect)
		if err != nil {
			k.db.Close()
			return scrub(err, uri)
		}
		if !exists {
			k.absent = "the SQL catalog has no iceberg_tables table yet; the sink creates it"
			return nil
		}
	}
	cat, err := sqlcat.NewCatalog(k.cfg.Catalog.Name, k.db, dialect, props)
	for attempt := 1; err != nil && attempt < 5 && ctx.Err() == nil; attempt++ {
		// The catalog creates its tables when absent: members starting at
		// once race on PostgreSQL's CREATE TABLE IF NOT EXISTS, and the
		// loser is told of a duplicate key, type or table (SQLSTATE 23505,
		// 42710, 42P07). The tables exist then; opening again finds them.
		msg := err.Error()
		if !strings.Contains(msg, "23505") && !strings.Contains(msg, "42710") && !strings.Contains(msg, "42P07") {
			break
		}
		time.Sleep(time.Duration(attempt) * 100 * time.Millisecond)
		cat, err = sqlcat.NewCatalog(k.cfg.Catalog.Name, k.db, dialect, props)
	}
	if err != nil {
		k.db.Close()
		return scrub(err, uri)
	}
	k.cat = cat
	return nil
}

func (k *Catalog) openREST(ctx context.Context) error {
	c := k.cfg.Catalog
	opts := []rest.Option{rest.WithAdditionalProps(k.props)}
	if c.Warehouse != "" {
		opts = append(opts, rest.WithWarehouseLocation(c.Warehouse))
	}
	if v := c.Credential.Value(); v != "" {
		opts = append(opts, rest.WithCredential(v))
	}
	if v := c.Token.Value(); v != "" {
		opts = append(opts, rest.WithOAuthToken(v))
	}
	var sign *sigV4
	if c.SigV4 {
		var err error
		if sign, err = loadSigV4(ctx, c.Region, c.SigningName); err != nil {
			return err
		}
		opts = append(opts, sign.options()...)
	}
	cat, err := rest.NewCatalog(ctx, c.Name, c.URI.Value(), opts...)
	if err != nil {
		if sign != nil {
			return sign.refused(err)
		}
		return err
	}
	k.cat = cat
	return nil
}

// sqlTablesExist says whether the database holds the SQL catalog's
// iceberg_tables table.
func sqlTablesExist(ctx context.Context, db *sql.DB, dialect sqlcat.SupportedDialect) (bool, error) {
	q := "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'iceberg_tables'"
	if dialect == sqlcat.Postgres {
		q = "SELECT count(*) FROM pg_catalog.pg_tables WHERE tablename = 'iceberg_tables' AND schemaname = ANY (current_schemas(false))"
	}
	var n int
	if err := db.QueryRowContext(ctx, q).Scan(&n); err != nil {
		return false, fmt.Errorf("looking for the catalog's tables: %w", err)
	}
	return n > 0, nil
}

// pgConnector is the PostgreSQL driver's connector of a postgres:// URI.
// The URI is checked first (config.CheckPostgresURI): the driver panics on
// a DSN it cannot parse, and sends the query parameters it does not know
// to the server as settings, which a server logging its statements writes
// in clear text. A panic the check did not foresee is an error too.
func pgConnector(uri string) (c *pgdriver.Connector, err error) {
	if err := config.CheckPostgresURI(uri); err != nil {
		return nil, fmt.Errorf("table.catalog.uri: %w", err)
	}
	defer func() {
		if r := recover(); r != nil {
			c, err = nil, scrub(fmt.Errorf("table.catalog.uri: %v", r), uri)
		}
	}()
	return pgdriver.NewConnector(pgdriver.WithDSN(uri)), nil
}

// scrub removes a URI's password from an error a driver made of it.
func scrub(err error, uri string) error {
	u, perr := url.Parse(uri)
	if perr != nil || u.User == nil {
		return err
	}
	pw, ok := u.User.Password()
	if !ok || pw == "" || !strings.Contains(err.Error(), pw) {
		return err
	}
	return errors.New(strings.ReplaceAll(err.Error(), pw, "xxxxx"))
}

// Close releases the catalog's connections.
func (k *Catalog) Close() error {
	if k.db != nil {
		return k.db.Close()
	}
	return nil
}

// namespace is the configured namespace as an identifier.
func (k *Catalog) namespace() itable.Identifier {
	return strings.Split(k.cfg.Namespace, ".")
}

// Location is where a table created by the sink lives:
// {store.url}/{namespace levels}/{name}.
func (k *Catalog) Location(name string) string {
	return k.warehouse + "/" + strings.Join(append(k.namespace(), name), "/")
}

// Table returns the handle of the table called name, created from s when
// absent, or adopted when its schema accepts s, evolving it first where it
// can (see Handle.Fit); otherwise the error wraps ErrIncompatible and names
// the first field that does not fit. s is the Parquet schema of the sink's
// files; the handle's Schema is s with the table's field ids.
//
// s is nil when the files' schema follows the records (Avro): the table is
// then created by the first Fit, and adopted here when it exists.
func (k *Catalog) Table(ctx context.Context, name string, s *schema.Schema) (*Handle, error) {
	ident := append(k.namespace(), name)
	what := strings.Join(ident, ".")
	h := k.handle(ident)
	for _, p := range k.cfg.PartitionBy {
		h.partitionBy = append(h.partitionBy, p.String())
	}
	tbl, err := k.cat.LoadTable(ctx, ident)
	switch {
	case errors.Is(err, catalog.ErrNoSuchTable) && s == nil:
		return h, nil
	case errors.Is(err, catalog.ErrNoSuchTable):
		tbl, err = k.create(ctx, ident, s)
		if errors.Is(err, catalog.ErrTableAlreadyExists) {
			// Another member created it first.
			tbl, err = k.cat.LoadTable(ctx, ident)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("table %s: %w", what, err)
	}
	if err := h.adopt(tbl); err != nil {
		return nil, fmt.Errorf("table %s: %w", what, err)
	}
	if s != nil {
		if h.schema, _, err = h.Fit(ctx, s); err != nil {
			return nil, err
		}
	}
	return h, nil
}

// handle is a Handle of the table ident, before it is created or adopted.
func (k *Catalog) handle(ident itable.Identifier) *Handle {
	h := &Handle{k: k, cat: k.cat, ident: ident, name: strings.Join(ident, "."), warehouse: k.warehouse, fitted: map[string]*schema.Schema{}}
	h.seenSpec.Store(-1)
	return h
}

// Existing returns the handle of the table ident (its namespace levels,
// then its name), which must exist: it is never created, and the handle
// has no schema (see Fit). The error wraps ErrNoSuchTable when the table is
// not in the catalog.
func (k *Catalog) Existing(ctx context.Context, ident []string) (*Handle, error) {
	what := strings.Join(ident, ".")
	tbl, err := k.cat.LoadTable(ctx, ident)
	if errors.Is(err, catalog.ErrNoSuchTable) {
		return nil, fmt.Errorf("table %s: %w in catalog %s", what, ErrNoSuchTable, k.cfg.Catalog.Name)
	}
	if err != nil {
		return nil, fmt.Errorf("table %s: %w", what, err)
	}
	h := k.handle(ident)
	if err := h.adopt(tbl); err != nil {
		return nil, fmt.Errorf("table %s: %w", what, err)
	}
	return h, nil
}

// Tables lists the tables of the configured namespace, each as its
// namespace levels then its name.
func (k *Catalog) Tables(ctx context.Context) ([][]string, error) {
	var out [][]string
	if k.cat == nil {
		return nil, nil
	}
	for ident, err := range k.cat.ListTables(ctx, k.namespace()) {
		if err != nil {
			return nil, fmt.Errorf("listing the tables of namespace %s: %w", k.cfg.Namespace, err)
		}
		out = append(out, ident)
	}
	return out, nil
}

// create makes the namespace when absent and the table in it.
func (k *Catalog) create(ctx context.Context, ident itable.Identifier, s *schema.Schema) (*itable.Table, error) {
	is, err := icebergSchema(s, k.cfg.FormatVersion)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrIncompatible, err)
	}
	spec, err := partitionSpec(is, k.cfg.PartitionBy)
	if err != nil {
		// A schema that lacks a partition field's column, or has it of a
		// type its transform cannot take (the first Avro writer schema,
		// which creates the table), cannot be the table's.
		return nil, fmt.Errorf("%w: %w", ErrIncompatible, err)
	}
	ns := k.namespace()
	if err := k.cat.CreateNamespace(ctx, ns, nil); err != nil && !errors.Is(err, catalog.ErrNamespaceAlreadyExists) {
		return nil, fmt.Errorf("creating namespace %s: %w", k.cfg.Namespace, err)
	}
	props := iceberg.Properties{
		itable.PropertyFormatVersion: strconv.Itoa(k.cfg.FormatVersion),
		// pqsink retries commits itself (Handle.Commit): iceberg-go's own
		// retry would replay a stale exactly-once state.
		itable.CommitNumRetriesKey: "0",
	}
	return k.cat.CreateTable(ctx, ident, is,
		catalog.WithPartitionSpec(&spec),
		catalog.WithLocation(k.Location(ident[len(ident)-1])),
		catalog.WithProperties(props))
}

// partitionSpec builds the spec of table.partition_by over is.
func partitionSpec(is *iceberg.Schema, fields []config.PartitionField) (iceberg.PartitionSpec, error) {
	var opts []iceberg.PartitionOption
	for _, p := range fields {
		f, ok := is.FindFieldByName(p.Column)
		if !ok {
			return iceberg.PartitionSpec{}, fmt.Errorf("table.partition_by: %s: no column %s in the schema", p, p.Column)
		}
		tr, err := iceberg.ParseTransform(transformText(p))
		if err != nil {
			return iceberg.PartitionSpec{}, fmt.Errorf("table.partition_by: %s: %w", p, err)
		}
		if !tr.CanTransform(f.Type) {
			return iceberg.PartitionSpec{}, fmt.Errorf("table.partition_by: %s: %s cannot transform column %s of type %s", p, p.Transform, p.Column, f.Type)
		}
		opts = append(opts, iceberg.AddPartitionFieldBySourceID(f.ID, partitionName(p), tr, is, nil))
	}
	return iceberg.NewPartitionSpecOpts(opts...)
}

// transformText is a partition field's transform as Iceberg writes it.
func transformText(p config.PartitionField) string {
	if p.Param != 0 {
		return p.Transform + "[" + strconv.Itoa(p.Param) + "]"
	}
	return p.Transform
}

// partitionName names a partition field as Iceberg's Java API does
// (column, column_day, column_bucket...), with the dots of a nested column
// as underscores, so that the name is one path segment.
func partitionName(p config.PartitionField) string {
	col := strings.ReplaceAll(p.Column, ".", "_")
	switch p.Transform {
	case "identity":
		return col
	case "truncate":
		return col + "_trunc"
	}
	return col + "_" + p.Transform
}
