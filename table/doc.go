// Package table is the sink's view of an Apache Iceberg table: the catalog
// that holds it (SQL on SQLite or PostgreSQL, with the tables of Iceberg's
// JDBC catalog, REST, or AWS Glue), the table created from the sink's Parquet schema
// or adopted when its schema accepts the records, and the commits that
// append the files the sink uploaded, exactly once.
//
// The table's current snapshot is the authority on what is in the table
// (docs/tables-exactly-once.md): its summary carries
// the exactly-once state of every (group, topic, partition) that wrote to
// it, in the skip-set shape of the Kafka commit metadata. A commit reloads
// that state, drops the files whose range it already covers, merges its
// own partitions' state into everyone else's, and swaps the table's
// metadata at the catalog, retrying on conflict.
//
// The package does no Parquet writing of its own: the data files are the
// sink's, and their metrics come from the footers it wrote. Metadata,
// manifests and catalogs are github.com/apache/iceberg-go's.
package table
