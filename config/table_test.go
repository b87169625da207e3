package config

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// tableOK is the table section of issue 21, as written there.
const tableOK = `table:
  format: iceberg
  catalog:
    type: sql
    uri: sqlite:///var/lib/pqsink/catalog.db
  namespace: kafka
  name: "{topic}"
  commit_interval: 30s
  partition_by: ["day(_kafka.timestamp)"]
  format_version: 3
`

func TestTableSettings(t *testing.T) {
	c, err := Parse([]byte(base+tableOK), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := &Table{
		Format:         "iceberg",
		Catalog:        Catalog{Type: "sql", URI: "sqlite:///var/lib/pqsink/catalog.db", Name: "pqsink"},
		Namespace:      "kafka",
		Name:           "{topic}",
		CommitInterval: 30 * time.Second,
		PartitionBy:    []PartitionField{{Transform: "day", Column: "_kafka.timestamp"}},
		PartitionBySet: true,
		FormatVersion:  3,
		Mode:           ModeAppend,
	}
	if !reflect.DeepEqual(c.Table, want) {
		t.Errorf("table = %+v\nwant %+v", c.Table, want)
	}
	if got := c.Table.TableName("orders.v1"); got != "orders.v1" {
		t.Errorf("TableName = %q", got)
	}

	// No table section: no table.
	c, err = Parse([]byte(base), nil)
	if err != nil || c.Table != nil {
		t.Errorf("without a table section: %v, %+v", err, c.Table)
	}

	// Defaults, a REST catalog, every transform.
	c, err = Parse([]byte(kafkaOK+storeOK+"format: {type: avro, registry: {url: 'http://r:8081'}}\n"+`table:
  format: ICEBERG
  catalog: {type: rest, uri: 'https://cat.example.com/api/catalog', warehouse: analytics, credential: 'id:${S}'}
  namespace: lake.raw
  partition_by: [identity(a), year(b), month(c.d), day(e), hour(f), 'bucket[16](g)', 'truncate[4](h)']
`), envOf(map[string]string{"S": "sec"}))
	if err != nil {
		t.Fatal(err)
	}
	tb := c.Table
	if tb.Name != "{topic}" || tb.CommitInterval != time.Second || c.Rotate.Interval != 5*time.Second || tb.FormatVersion != 2 || tb.Catalog.Name != "pqsink" ||
		tb.Catalog.Credential.Value() != "id:sec" || tb.Catalog.Warehouse != "analytics" || tb.Format != "iceberg" {
		t.Errorf("table = %+v", tb)
	}
	var specs []string
	for _, p := range tb.PartitionBy {
		specs = append(specs, p.String())
	}
	if got := strings.Join(specs, " "); got != "identity(a) year(b) month(c.d) day(e) hour(f) bucket[16](g) truncate[4](h)" {
		t.Errorf("partition_by = %s", got)
	}

	// A relative SQLite path resolves against the config's folder;
	// variant defaults to format version 3.
	c, err = parse([]byte(base+"table: {format: iceberg, namespace: n, catalog: {type: sql, uri: 'sqlite:state/cat.db'}}\n"), nil, "/etc/pqsink", nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Table.Catalog.URI.Value() != "sqlite:///etc/pqsink/state/cat.db" || c.Table.FormatVersion != 3 {
		t.Errorf("uri %q, format version %d", c.Table.Catalog.URI.Value(), c.Table.FormatVersion)
	}
}

func TestTableInvalid(t *testing.T) {
	const cat = "catalog: {type: sql, uri: 'sqlite:///x.db'}"
	tbl := func(s string) string { return base + "table: {format: iceberg, namespace: n, " + s + "}\n" }
	for _, tc := range []struct {
		name, text string
		want       string
	}{
		{"no format", base + "table: {namespace: n, " + cat + "}\n", "table.format: required"},
		{"format", base + "table: {format: delta, namespace: n, " + cat + "}\n", `table.format: "delta" is not one of iceberg`},
		{"no namespace", base + "table: {format: iceberg, " + cat + "}\n", "table.namespace: required"},
		{"empty namespace level", base + "table: {format: iceberg, namespace: 'a..b', " + cat + "}\n", "table.namespace: \"a..b\" has an empty level"},
		{"no catalog", base + "table: {format: iceberg, namespace: n}\n", "table.catalog.type: required"},
		{"catalog type", tbl("catalog: {type: hive, uri: 'thrift://h:9083'}"), `table.catalog.type: "hive" is not one of sql, rest, glue`},
		{"no uri", tbl("catalog: {type: sql}"), "table.catalog.uri: required"},
		{"sql uri scheme", tbl("catalog: {type: sql, uri: 'mysql://h/db'}"), "table.catalog.uri: scheme \"mysql\" is not one of sqlite, postgres"},
		{"postgres no db", tbl("catalog: {type: sql, uri: 'postgres://u:p@h:5432'}"), "table.catalog.uri: want postgres://user:password@host:port/database"},
		{"postgres sslmode", tbl("catalog: {type: sql, uri: 'postgres://u:p@h:5432/db?sslmode=bogus'}"), `table.catalog.uri: query parameter sslmode: not one of disable, allow`},
		{"postgres sslrootcert", tbl("catalog: {type: sql, uri: 'postgres://u:p@h:5432/db?sslmode=verify-full&sslrootcert=/nonexistent/ca.pem'}"), "table.catalog.uri: query parameter sslrootcert: open /nonexistent/ca.pem"},
		{"postgres sslcert alone", tbl("catalog: {type: sql, uri: 'postgres://u:p@h:5432/db?sslcert=/c.pem'}"), "table.catalog.uri: query parameters sslcert and sslkey go together"},
		{"postgres connect_timeout", tbl("catalog: {type: sql, uri: 'postgres://u:p@h:5432/db?connect_timeout=abc'}"), `table.catalog.uri: query parameter connect_timeout: neither whole seconds`},
		{"postgres password parameter", tbl("catalog: {type: sql, uri: 'postgres://u@h:5432/db?password=X'}"), `table.catalog.uri: query parameter "password": the driver would send it to the server as a setting`},
		{"postgres sslpassword parameter", tbl("catalog: {type: sql, uri: 'postgres://u@h:5432/db?sslpassword=X'}"), `table.catalog.uri: query parameter "sslpassword"`},
		{"postgres user parameter", tbl("catalog: {type: sql, uri: 'postgres://h:5432/db?user=u'}"), `table.catalog.uri: query parameter "user" is not read by`},
		{"rest uri", tbl("catalog: {type: rest, uri: 'sqlite:///x.db'}"), "table.catalog.uri: want the REST catalog's URL"},
		{"rest uri user", tbl("catalog: {type: rest, uri: 'https://u:p@h/api'}"), "table.catalog.uri: must not contain credentials"},
		{"sql warehouse", tbl("catalog: {type: sql, uri: 'sqlite:///x.db', warehouse: w}"), "table.catalog.warehouse: not used when table.catalog.type is sql"},
		{"credential and token", tbl("catalog: {type: rest, uri: 'https://h/api', credential: 'a:b', token: t}"), "table.catalog.token: set either"},
		{"name placeholder", tbl(cat + ", name: '{topic}-{partition}'"), "table.name: \"{topic}-{partition}\": {topic} is the only placeholder"},
		{"name slash", tbl(cat + ", name: 'a/{topic}'"), "table.name: \"a/{topic}\": a table name cannot contain"},
		{"commit interval", tbl(cat + ", commit_interval: 10ms"), "table.commit_interval: "},
		{"transform", tbl(cat + ", partition_by: ['days(ts)']"), `table.partition_by: "days(ts)": transform "days" is not one of identity, year, month, day, hour, bucket, truncate`},
		{"no parens", tbl(cat + ", partition_by: [ts]"), `table.partition_by: "ts": want transform(column)`},
		{"bucket width", tbl(cat + ", partition_by: ['bucket(ts)']"), `table.partition_by: "bucket(ts)": bucket needs a width`},
		{"bucket zero", tbl(cat + ", partition_by: ['bucket[0](ts)']"), `the width in brackets must be a whole number from 1`},
		{"day width", tbl(cat + ", partition_by: ['day[2](ts)']"), `day takes no width`},
		{"empty column", tbl(cat + ", partition_by: ['day(a..b)']"), `column "a..b" is not a dotted column path`},
		{"twice", tbl(cat + ", partition_by: ['day(ts)', 'day(ts)']"), `"day(ts)" is listed twice`},
		{"envelope off", base + "envelope: false\ntable: {format: iceberg, namespace: n, " + cat + ", partition_by: ['day(_kafka.timestamp)']}\n", "the _kafka columns exist only with envelope: true"},
		{"variant v2", tbl(cat + ", format_version: 2"), "table.format_version: format.type variant needs 3"},
		{"version 4", tbl(cat + ", format_version: 4"), "table.format_version: "},
		{"unknown key", tbl(cat + ", commit_every: 1m"), "table.commit_every: unknown key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.text), nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}

// TestTableSecrets: the catalog's password, credential and token never
// show, whichever way the config is printed, and the rendered config
// loads back.
func TestTableSecrets(t *testing.T) {
	env := envOf(map[string]string{"PG": secretValue, "CID": "client", "CS": secretValue})
	check := func(what, s string) {
		t.Helper()
		if strings.Contains(s, secretValue) || strings.Contains(s, "s3cr3t") {
			t.Errorf("%s leaks the secret:\n%s", what, s)
		}
	}
	for _, text := range []string{
		base + "table: {format: iceberg, namespace: n, catalog: {type: sql, uri: 'postgres://pqsink:${PG}@db:5432/lake'}}\n",
		base + "table: {format: iceberg, namespace: n, catalog: {type: rest, uri: 'https://h/api', credential: '${CID}:${CS}'}}\n",
		base + "table: {format: iceberg, namespace: n, catalog: {type: rest, uri: 'https://h/api', token: '${PG}'}}\n",
	} {
		c, err := Parse([]byte(text), env)
		if err != nil {
			t.Fatal(err)
		}
		for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%d"} {
			check("Sprintf "+verb+" of *Config", fmt.Sprintf(verb, c))
			check("Sprintf "+verb+" of Config", fmt.Sprintf(verb, *c))
			check("Sprintf "+verb+" of Table", fmt.Sprintf(verb, *c.Table))
			check("Sprintf "+verb+" of *Table", fmt.Sprintf(verb, c.Table))
			check("Sprintf "+verb+" of Catalog", fmt.Sprintf(verb, c.Table.Catalog))
			check("Sprintf "+verb+" of a struct holding pointers", fmt.Sprintf(verb, struct {
				T *Table
				C *Catalog
			}{c.Table, &c.Table.Catalog}))
		}
		out := c.Redacted()
		check("Redacted", out)
		c2, err := Parse([]byte(out), nil)
		if err != nil {
			t.Fatalf("Parse(Redacted()): %v\n%s", err, out)
		}
		if c2.Table.Namespace != "n" || c2.Table.Catalog.Type != c.Table.Catalog.Type || c2.Table.CommitInterval != c.Table.CommitInterval {
			t.Errorf("round trip: %+v", c2.Table)
		}
	}
	// A bad value around a secret does not show it either.
	for _, text := range []string{
		base + "table: {format: iceberg, namespace: n, catalog: {type: sql, uri: 'mysql://u:${PG}@h/db'}}\n",
		base + "table: {format: iceberg, namespace: n, catalog: {type: sql, uri: 'postgres://u@h/db?password=${PG}'}}\n",
		base + "table: {format: iceberg, namespace: n, catalog: {type: sql, uri: 'postgres://u:${PG}@h/db?sslmode=bogus'}}\n",
		base + "table: {format: iceberg, namespace: n, catalog: {type: sql, uri: 'postgres://u:${PG}@h/db?connect_timeout=${PG}'}}\n",
		base + "table: {format: iceberg, namespace: n, catalog: {type: rest, uri: 'https://h/api', credential: '${PG}', token: x}}\n",
		base + "table: {format: iceberg, namespace: n, catalog: {type: rest, uri: 'https://u:${PG}@h/api'}}\n",
		base + "table: {format: iceberg, namespace: n, catalog: {type: sql, uri: '" + secretValue + "${'}}\n",
	} {
		_, err := Parse([]byte(text), env)
		if err == nil {
			t.Errorf("no error for\n%s", text)
			continue
		}
		check("error", err.Error())
	}
}

// TestPartitionBySet: partition_by given, even as [], is the spec; absent
// or null, the sink follows an existing table's. The logged configuration
// keeps the difference.
func TestPartitionBySet(t *testing.T) {
	for _, c := range []struct {
		name, line string
		set        bool
		fields     int
	}{
		{"given", `  partition_by: ["day(_kafka.timestamp)"]`, true, 1},
		{"empty", `  partition_by: []`, true, 0},
		{"null", `  partition_by: null`, false, 0},
		{"absent", ``, false, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			text := strings.Replace(base+tableOK, `  partition_by: ["day(_kafka.timestamp)"]`, c.line, 1)
			cfg, err := Parse([]byte(text), nil)
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Table.PartitionBySet != c.set || len(cfg.Table.PartitionBy) != c.fields {
				t.Errorf("PartitionBySet %v with %d fields, want %v with %d", cfg.Table.PartitionBySet, len(cfg.Table.PartitionBy), c.set, c.fields)
			}
			again, err := Parse([]byte(cfg.Redacted()), nil)
			if err != nil {
				t.Fatalf("Parse(Redacted()): %v", err)
			}
			if again.Table.PartitionBySet != c.set || len(again.Table.PartitionBy) != c.fields {
				t.Errorf("the logged configuration loads back with PartitionBySet %v and %d fields", again.Table.PartitionBySet, len(again.Table.PartitionBy))
			}
		})
	}
}

// TestGlueCatalog: a glue catalog's keys, read, refused where they do not
// apply, and shown in the logged configuration, which loads back the same.
func TestGlueCatalog(t *testing.T) {
	tbl := func(cat string) string {
		return base + "table: {format: iceberg, namespace: kafka, catalog: " + cat + "}\n"
	}
	for _, tc := range []struct {
		name, text string
		want       Catalog
	}{
		{"defaults", tbl("{type: glue}"), Catalog{Type: "glue", Name: "pqsink"}},
		{"every key", tbl("{type: GLUE, name: lake, region: eu-west-1, endpoint: 'http://127.0.0.1:4566', catalog_id: '123456789012'}"),
			Catalog{Type: "glue", Name: "lake", Region: "eu-west-1", Endpoint: "http://127.0.0.1:4566", CatalogID: "123456789012"}},
		{"gov region", tbl("{type: glue, region: us-gov-west-1}"), Catalog{Type: "glue", Name: "pqsink", Region: "us-gov-west-1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse([]byte(tc.text), nil)
			if err != nil {
				t.Fatal(err)
			}
			if c.Table.Catalog != tc.want {
				t.Errorf("catalog = %+v, want %+v", c.Table.Catalog, tc.want)
			}
			out := c.Redacted()
			for _, k := range []string{"region:", "endpoint:", "catalog_id:"} {
				if !strings.Contains(out, k) {
					t.Errorf("Redacted has no %s:\n%s", k, out)
				}
			}
			if strings.Contains(out, "uri:") {
				t.Errorf("Redacted shows a uri for glue:\n%s", out)
			}
			c2, err := Parse([]byte(out), nil)
			if err != nil {
				t.Fatalf("Parse(Redacted()): %v\n%s", err, out)
			}
			if !reflect.DeepEqual(c2.Table, c.Table) {
				t.Errorf("round trip: %+v, want %+v", c2.Table, c.Table)
			}
		})
	}

	for _, tc := range []struct {
		name, text, want string
	}{
		{"uri", tbl("{type: glue, uri: 'https://glue.eu-west-1.amazonaws.com'}"), "table.catalog.uri: not used when table.catalog.type is glue"},
		{"warehouse", tbl("{type: glue, warehouse: w}"), "table.catalog.warehouse: not used when table.catalog.type is glue"},
		{"credential", tbl("{type: glue, credential: 'a:b'}"), "table.catalog.credential: not used when table.catalog.type is glue"},
		{"token", tbl("{type: glue, token: t}"), "table.catalog.token: not used when table.catalog.type is glue"},
		{"region for sql", tbl("{type: sql, uri: 'sqlite:///x.db', region: eu-west-1}"), "table.catalog.region: not used when table.catalog.type is sql"},
		{"endpoint for rest", tbl("{type: rest, uri: 'https://h/api', endpoint: 'https://e'}"), "table.catalog.endpoint: not used when table.catalog.type is rest"},
		{"catalog_id for sql", tbl("{type: sql, uri: 'sqlite:///x.db', catalog_id: '123456789012'}"), "table.catalog.catalog_id: not used when table.catalog.type is sql"},
		{"region", tbl("{type: glue, region: Europe}"), `table.catalog.region: "Europe" is not an AWS region name`},
		{"endpoint scheme", tbl("{type: glue, endpoint: 'glue.eu-west-1.amazonaws.com'}"), "table.catalog.endpoint: \"glue.eu-west-1.amazonaws.com\": want the http(s) URL"},
		{"endpoint user", tbl("{type: glue, endpoint: 'https://k:s@glue.example.com'}"), "table.catalog.endpoint: must not contain credentials"},
		{"catalog_id", tbl("{type: glue, catalog_id: acme}"), `table.catalog.catalog_id: "acme" is not an AWS account id`},
		{"nested namespace", base + "table: {format: iceberg, namespace: lake.raw, catalog: {type: glue}}\n", `table.namespace: "lake.raw": a Glue catalog's namespace is one database`},
		{"unknown key", tbl("{type: glue, profile: dev}"), "table.catalog.profile: unknown key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.text), nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}

// TestRESTSigV4: a rest catalog's SigV4 keys, read, refused where they do
// not apply or with another way to authenticate, and shown in the logged
// configuration, which loads back the same.
func TestRESTSigV4(t *testing.T) {
	tbl := func(cat string) string {
		return base + "table: {format: iceberg, namespace: kafka, catalog: " + cat + "}\n"
	}
	const glueREST = "type: rest, uri: 'https://glue.eu-west-1.amazonaws.com/iceberg', warehouse: '123456789012'"
	for _, tc := range []struct {
		name, text string
		want       Catalog
	}{
		{"glue endpoint", tbl("{" + glueREST + ", sigv4: true, signing_name: glue, region: eu-west-1}"),
			Catalog{Type: "rest", Name: "pqsink", URI: "https://glue.eu-west-1.amazonaws.com/iceberg", Warehouse: "123456789012",
				SigV4: true, SigningName: "glue", Region: "eu-west-1"}},
		{"region from the environment", tbl("{type: rest, uri: 'https://s3tables.us-east-1.amazonaws.com/iceberg', sigv4: TRUE, signing_name: s3tables}"),
			Catalog{Type: "rest", Name: "pqsink", URI: "https://s3tables.us-east-1.amazonaws.com/iceberg", SigV4: true, SigningName: "s3tables"}},
		{"off", tbl("{type: rest, uri: 'https://h/api', sigv4: false, token: t}"),
			Catalog{Type: "rest", Name: "pqsink", URI: "https://h/api", Token: "t"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse([]byte(tc.text), nil)
			if err != nil {
				t.Fatal(err)
			}
			if c.Table.Catalog != tc.want {
				t.Errorf("catalog = %+v, want %+v", c.Table.Catalog, tc.want)
			}
			out := c.Redacted()
			if strings.Contains(out, "sigv4:") != tc.want.SigV4 || strings.Contains(out, "signing_name:") != tc.want.SigV4 {
				t.Errorf("Redacted shows sigv4 and signing_name: %v, want %v:\n%s", !tc.want.SigV4, tc.want.SigV4, out)
			}
			c2, err := Parse([]byte(out), nil)
			if err != nil {
				t.Fatalf("Parse(Redacted()): %v\n%s", err, out)
			}
			if c2.Table.Catalog.SigV4 != c.Table.Catalog.SigV4 || c2.Table.Catalog.SigningName != c.Table.Catalog.SigningName ||
				c2.Table.Catalog.Region != c.Table.Catalog.Region || c2.Table.Catalog.URI != c.Table.Catalog.URI {
				t.Errorf("round trip: %+v, want %+v", c2.Table.Catalog, c.Table.Catalog)
			}
		})
	}

	for _, tc := range []struct {
		name, text, want string
	}{
		{"no signing name", tbl("{" + glueREST + ", sigv4: true}"), "table.catalog.signing_name: required"},
		{"with a credential", tbl("{" + glueREST + ", sigv4: true, signing_name: glue, credential: 'a:b'}"),
			"table.catalog.credential: not with table.catalog.sigv4: the requests are signed with AWS credentials"},
		{"with a token", tbl("{" + glueREST + ", sigv4: true, signing_name: glue, token: t}"),
			"table.catalog.token: not with table.catalog.sigv4"},
		{"signing name without sigv4", tbl("{" + glueREST + ", signing_name: glue}"), "table.catalog.signing_name: only with table.catalog.sigv4: true"},
		{"region without sigv4", tbl("{" + glueREST + ", region: eu-west-1}"), "table.catalog.region: only with table.catalog.sigv4: true"},
		{"not a boolean", tbl("{" + glueREST + ", sigv4: yes please, signing_name: glue}"), `table.catalog.sigv4: want true or false, got "yes please"`},
		{"signing name", tbl("{" + glueREST + ", sigv4: true, signing_name: 'S3 Tables'}"), `table.catalog.signing_name: "S3 Tables" is not an AWS service name`},
		{"region", tbl("{" + glueREST + ", sigv4: true, signing_name: glue, region: Ireland}"), `table.catalog.region: "Ireland" is not an AWS region name`},
		{"sigv4 for sql", tbl("{type: sql, uri: 'sqlite:///x.db', sigv4: true}"), "table.catalog.sigv4: not used when table.catalog.type is sql"},
		{"signing name for sql", tbl("{type: sql, uri: 'sqlite:///x.db', signing_name: glue}"), "table.catalog.signing_name: not used when table.catalog.type is sql"},
		{"sigv4 for glue", tbl("{type: glue, sigv4: true}"), "table.catalog.sigv4: not used when table.catalog.type is glue; a glue catalog always signs its requests with SigV4"},
		{"signing name for glue", tbl("{type: glue, signing_name: glue}"), "table.catalog.signing_name: not used when table.catalog.type is glue"},
		{"endpoint for rest", tbl("{" + glueREST + ", sigv4: true, signing_name: glue, endpoint: 'https://e'}"), "table.catalog.endpoint: not used when table.catalog.type is rest"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.text), nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}

// TestTableUpsert: table.mode, table.key and format.envelope, what they
// need of each other, and their rendering.
func TestTableUpsert(t *testing.T) {
	const cat = "catalog: {type: sql, uri: 'sqlite:///x.db'}"
	schemaFile := filepath.Join(t.TempDir(), "s.schema")
	if err := os.WriteFile(schemaFile, []byte("message m { required int64 id; }"), 0o600); err != nil {
		t.Fatal(err)
	}
	jsonFormat := "format: {type: json, schema_file: " + schemaFile + "}\n"
	c, err := parse([]byte(kafkaOK+storeOK+jsonFormat+"table: {format: iceberg, namespace: n, "+cat+"}\n"), nil, "/", nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Table.Mode != ModeAppend || c.Table.Upsert() || c.Table.Key != nil || c.Format.Envelope != "" {
		t.Errorf("defaults: mode %q, key %v, envelope %q", c.Table.Mode, c.Table.Key, c.Format.Envelope)
	}
	text := kafkaOK + storeOK + "format: {type: json, schema_file: " + schemaFile + ", envelope: debezium}\n" +
		"table: {format: iceberg, namespace: n, " + cat + ", mode: upsert, key: [tenant, id]}\n"
	c, err = parse([]byte(text), nil, "/", nil)
	if err != nil {
		t.Fatal(err)
	}
	if !c.Table.Upsert() || !reflect.DeepEqual(c.Table.Key, []string{"tenant", "id"}) || c.Format.Envelope != "debezium" || c.Table.MissingRows != MissingRowsFail {
		t.Errorf("upsert: mode %q, key %v, envelope %q", c.Table.Mode, c.Table.Key, c.Format.Envelope)
	}
	out := c.Redacted()
	for _, want := range []string{"mode: upsert", "key: [tenant, id]", "envelope: debezium", "missing_rows: fail"} {
		if !strings.Contains(out, want) {
			t.Errorf("rendered config lacks %q:\n%s", want, out)
		}
	}
	back, err := parse([]byte(out), nil, "/", nil)
	if err != nil || !reflect.DeepEqual(back.Table.Key, c.Table.Key) || back.Format.Envelope != "debezium" || !back.Table.Upsert() {
		t.Errorf("rendered config read back: %v", err)
	}

	tbl := func(fmtExtra, s string) string {
		return kafkaOK + storeOK + "format: {type: json, schema_file: " + schemaFile + fmtExtra + "}\n" +
			"table: {format: iceberg, namespace: n, " + cat + s + "}\n"
	}
	for _, tc := range []struct {
		name, text, want string
	}{
		{"mode", tbl("", ", mode: merge"), `table.mode: "merge" is not one of append, upsert`},
		{"no key", tbl("", ", mode: upsert"), "table.key: mode: upsert needs the fields that identify a row"},
		{"empty key", tbl("", ", mode: upsert, key: []"), "table.key: mode: upsert needs the fields"},
		{"key twice", tbl("", ", mode: upsert, key: [id, id]"), `table.key: "id" is listed twice`},
		{"key without upsert", tbl("", ", key: [id]"), "table.key: only with mode: upsert"},
		{"missing_rows without upsert", tbl("", ", missing_rows: skip"), "table.missing_rows: only with mode: upsert"},
		{"missing_rows", tbl("", ", mode: upsert, key: [id], missing_rows: drop"), `table.missing_rows: "drop" is not one of fail, skip`},
		{"no envelope", "envelope: false\n" + tbl("", ", mode: upsert, key: [id]"), "table.mode: upsert needs envelope: true"},
		{"envelope value", tbl(", envelope: maxwell", ", mode: upsert, key: [id]"), `format.envelope: "maxwell" is not one of debezium`},
		{"envelope append", tbl(", envelope: debezium", ""), "format: envelope debezium: the change events of format.envelope need table.mode: upsert"},
		{"envelope no table", kafkaOK + storeOK + "format: {type: json, schema_file: " + schemaFile + ", envelope: debezium}\n", "need a table with mode: upsert"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parse([]byte(tc.text), nil, "/", nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}
