// Package connector is the sink runtime: it consumes Kafka topics as a
// member of a consumer group, turns each record into a Parquet row through
// the same row builder as `pqsink convert`, streams files to an object
// store, and commits offsets only for records whose file is durable.
//
// # Exactly once
//
// Every record lands in exactly one object, whatever rotates the files
// (record count, size, age, a clock-aligned schedule) and across crashes,
// restarts and rebalances:
//
//  1. An object's key is a pure function of the record's path (topic,
//     partition, record time, payload fields; see the path template) and of
//     the offset of the file's first record.
//  2. Every file's footer records its topic, partition, first and last
//     offset and record count (key-value metadata pqsink.kafka.*).
//  3. Uploads are create-if-absent. When the key exists, an earlier owner
//     wrote the file that starts at this record: its footer is read, its
//     last offset adopted for the path, and the local copy dropped.
//  4. After each upload the partition commits the smallest first offset of
//     its open files (or the next offset when none is open), with metadata
//     that lists, per path, the last offset already uploaded beyond it. A new
//     owner resumes at the committed offset and skips those records.
//  5. Per partition and path, at most one upload is outstanding between two
//     successful commits.
//
// Per partition and path the files form a chain, each starting at the path's
// first record after the previous file's last. Two owners (a restarted
// process, or a fenced-off one and its successor) can only diverge at a file
// with the same first offset, hence the same key; the second upload is
// refused and adopts the first.
//
// Stores without conditional writes (store.conditional_writes: false) run
// the same protocol, but the existence check becomes a HEAD before the
// upload. That covers restarts and crashes fully. What it cannot cover is
// two owners uploading the same key at the same moment (a fenced-off
// member still writing during a rebalance): the later upload replaces the
// earlier, and if the two files end at different offsets, the records
// between those offsets can be lost or written twice.
//
// # Rebalances and shutdown
//
// The members run their own cooperative group protocol
// (pqsink-cooperative-sticky, in package connector/group, whose Holdings
// keep a member's partitions across generations). At a rebalance a
// partition that stays with the member keeps its open files, once its
// committed state is checked to be the one it left; one that leaves is
// finished and committed, then handed over, and its next owner is given it
// only after that; a new one starts from its committed offset. While a member of an
// earlier release is in the group, the group runs the eager range
// protocol, and a partition that leaves has its open files dropped, its
// next owner reading it again from the committed offset; so does every
// partition of a member that is out of the group. On shutdown the open
// files are finished and committed (shutdown: finish) or dropped
// (shutdown: abandon), within the shutdown timeout.
package connector
