package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/pqsink/pqsink/cmd/pqsink/internal/sinkbench"
	"github.com/pqsink/pqsink/config"
	"github.com/pqsink/pqsink/table"
)

// The demo's table: kafka.events in a SQLite catalog beside the warehouse,
// both under the demo's directory.
const (
	demoNamespace = "kafka"
	demoCatalog   = "catalog.db"
	demoWarehouse = "warehouse"
)

// demoTable sets o up to land the demo into an Iceberg table under dir:
// the warehouse dir/warehouse (store.url), the SQLite catalog
// dir/catalog.db, one table per topic in namespace kafka, by day of the
// Kafka timestamp. The files' path follows the table, so o.Path is left
// to its default. It returns the table section's configuration.
func demoTable(o *sinkbench.Options, dir string) *config.Config {
	if o.Topic == "" {
		o.Topic = "events"
	}
	o.Store = "file://" + filepath.Join(dir, demoWarehouse)
	o.Path = ""
	uri := "sqlite://" + filepath.Join(dir, demoCatalog)
	o.Extra = fmt.Sprintf(`table:
  format: iceberg
  catalog:
    type: sql
    uri: %q
  namespace: %s
  name: "{topic}"
  commit_interval: 10s
  partition_by: ["day(_kafka.timestamp)"]
`, uri, demoNamespace)
	return &config.Config{
		Store: config.Store{URL: o.Store},
		Table: &config.Table{
			Format:    "iceberg",
			Catalog:   config.Catalog{Type: "sql", URI: config.Secret(uri), Name: "pqsink"},
			Namespace: demoNamespace,
			Name:      "{topic}",
		},
	}
}

// printDemoTable shows the demo's table as its current snapshot holds it:
// the snapshot, the catalog and the metadata file. It fails when the
// table does not hold every record the demo produced.
func printDemoTable(ctx context.Context, w io.Writer, cfg *config.Config, dir, topic string, rep sinkbench.Report) (*table.Snapshot, error) {
	cat, err := table.Open(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer cat.Close()
	snap, err := cat.Snapshot(ctx, []string{demoNamespace, topic}, 0)
	if err != nil {
		return nil, err
	}
	var rows int64
	for _, f := range snap.Files {
		rows += f.Records
	}
	if rows != rep.Records {
		return nil, fmt.Errorf("table %s holds %d records in its snapshot %d, the demo produced %d", snap.Table, rows, snap.ID, rep.Records)
	}
	fmt.Fprintf(w, "table %s (Iceberg, format version %d): snapshot %d, %d data files, %d records\n",
		snap.Table, rep.TableFormatVersion, snap.ID, len(snap.Files), rows)
	fmt.Fprintf(w, "  catalog   %s (SQLite, the tables of Iceberg's JDBC catalog, catalog name pqsink)\n", filepath.Join(dir, demoCatalog))
	fmt.Fprintf(w, "  metadata  %s\n", strings.TrimPrefix(snap.MetadataLocation, "file://"))
	return snap, nil
}

// printDemoQueries shows how to query the demo's table: DuckDB's
// iceberg_scan on its metadata file, or its data files as plain Parquet.
func printDemoQueries(w io.Writer, snap *table.Snapshot, format string) {
	meta := strings.TrimPrefix(snap.MetadataLocation, "file://")
	query := sinkbench.DemoQuery(format, meta)
	fmt.Fprintf(w, "\nquery the table with DuckDB's iceberg extension (INSTALL iceberg once):\n")
	fmt.Fprintf(w, "  duckdb -c \"LOAD iceberg; %s\"\n", query)
	fmt.Fprintf(w, "or the snapshot's data files, which are plain Parquet:\n")
	for _, f := range snap.Files[:min(len(snap.Files), 8)] {
		fmt.Fprintf(w, "  %s\n", strings.TrimPrefix(f.Location, "file://"))
	}
	if len(snap.Files) > 8 {
		fmt.Fprintf(w, "  … and %d more\n", len(snap.Files)-8)
	}
	fmt.Fprintf(w, "  duckdb -c \"SELECT count(*) FROM '%s'\"\n", filepath.Join(strings.TrimPrefix(snap.Location, "file://"), "data", "**", "*.parquet"))
	fmt.Fprintf(w, "docs/tables-catalogs.md shows Spark, Trino and Athena on the same catalog.\n")
}
