// Package source is the replay runtime behind `pqsink replay`: it reads the
// Parquet files that the sink landed under a prefix and produces their
// records to a Kafka topic again, in their original order per partition,
// with their keys, headers and timestamps restored from the _kafka envelope
// columns.
//
// # Planning
//
// The objects under the prefix are listed once. An object whose key matches
// the sink's path template (the config's path) is placed by its key alone:
// topic, partition and first offset come from the key, so a file of another
// topic or partition, or one whose chain successor starts at or before
// FromOffset, or that starts after ToOffset, is never opened. Other objects
// have their footer read (pqsink.kafka.* key-value metadata); a file merged
// from several partitions (pqsink.kafka.ranges) is planned once for each,
// and read for each only in the run of rows its ranges give the partition.
// When a file is
// read, its footer range and the statistics of _kafka.offset and
// _kafka.timestamp skip the file or its row groups before any page is read;
// the remaining records are filtered one by one.
//
// # Order
//
// The files of one source partition are merged by offset: a path template
// with {record_time} spreads a partition over several chains of files whose
// offset ranges interleave, and replay restores the partition's order
// across them. Partitions are replayed one after the other.
//
// # Values
//
// A file whose footer a format's replay side claims (format.Replayer,
// registered in format/all) has its records encoded by that format: Avro
// (avro.schema: Avro binary in the Confluent wire format, the schema
// registered under the target topic's value subject, read column by
// column when the columns allow), Protobuf (pqsink.protobuf.message: the
// message again, with its Confluent header when it had one) and JSON
// Schema (json.schema: the JSON its schema validates, in Confluent's wire
// format when the footer holds json.schema.id). docs/formats.md describes
// the seam. Of the other files, a file whose payload is one
// BYTE_ARRAY column without a logical type kept the original bytes, which
// are produced as they are (a null is a tombstone). Any other payload is
// rendered as JSON: typed columns as an object of the record's fields (null
// and absent fields left out), a VARIANT column as the JSON of its value.
// JSON is assembled straight from the column pages (reader.JSONAssembler);
// shapes that assembler does not handle (shredded VARIANT, say) go through
// reader.Rows.
//
// # Checkpoints
//
// A checkpoint records, per source partition, the last record produced and
// acknowledged: its object, its row in the object and its offset. A replay
// that starts from a checkpoint skips everything at or before those
// offsets, without opening the files that hold only such records. It is
// written after acknowledged batches (at most every CheckpointInterval),
// when the replay ends, and when it is interrupted.
package source
