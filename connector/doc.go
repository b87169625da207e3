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
//     With a table, its snapshot summary holds that state and is the
//     authority: the Kafka commit follows the table commit (package
//     connector/tablecommit).
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
// keep a member's partitions across generations). At a rebalance:
//
//   - A partition that stays with the member keeps its open files. Its
//     committed state is read again; if someone else committed it in
//     between, the partition drops its open files and reads again from
//     the committed state (the table's, with a table).
//   - A partition that leaves is handed over: its open files are finished,
//     uploaded and committed (to its table first, with a table) within the
//     shutdown timeout, and only then does the member rejoin, so that its
//     next owner is given it after that commit. A handover that cannot
//     finish in time drops the files, and the next owner reads those
//     records again from the committed offset.
//   - A new partition starts from its committed state.
//
// Open files are also dropped, the next owner reading them again from the
// committed offset, in two more cases: while a member of an earlier
// release is in the group, which makes the group run the eager range
// protocol, a partition that leaves is dropped rather than handed over;
// and a member that finds itself out of the group drops every partition,
// which someone else may hold already. On shutdown the open files are
// finished and committed (shutdown: finish) or dropped (shutdown:
// abandon), within the shutdown timeout.
//
// # Around the core
//
// The partition pipeline is this package's core; the jobs around it are
// packages of their own, each handed what it needs: the group membership
// (connector/group), fetching (connector/fetch), the table committer
// (connector/tablecommit, which takes the finished files and progress of
// each partition and commits them to its table, then the Kafka offsets),
// dead letters (connector/deadletter), the tables' maintenance
// (connector/maintenance), the memory budget and its pressure relief
// (connector/budget, whose Holders the partitions are), readiness and the
// checks of run --check (connector/health, handed the state this package
// keeps), the path template's {field} values and time_field
// (connector/pathfields) and replay (connector/source). None imports
// this package. The metrics
// look from the other side: connector/metrics imports this package and
// reads a sink's Reading, Histograms and Ready (serving /metrics,
// /healthz and /readyz), and this package does not import it.
package connector
