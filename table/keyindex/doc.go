// Package keyindex is the key index of upsert tables (docs/upsert.md):
// for one Kafka partition, it maps a row key, the table's key fields in
// canonical encoding (AppendInt, AppendString…), to the Kafka offset of
// the key's live row. The offset, not a file and position, is what is
// indexed, because compaction (pqsink's or another engine's) rewrites
// files but keeps each row's _kafka.offset column: the writer finds the
// row to delete through it.
//
// # Design
//
// The index is a small log-structured merge tree of two levels. Changes
// go to an in-memory table (a Go map from key to offset and epoch, a
// deleted key kept as a tombstone). Its bytes are counted (each key's
// bytes plus a measured per-entry cost), and when the table and the
// spilled runs' in-memory parts pass Options.MemoryLimit, the table is
// written, sorted, as a run in a local directory: 4 KiB blocks of
// entries, each with its CRC, and a footer listing each block's first
// key. A run keeps in memory only that sparse index and a bloom filter
// (10 bits a key), so a lookup of a key that a run lacks costs no read,
// and one it holds costs one block read. Past Options.MaxRuns runs, all
// runs are merged into one, newest entry of each key winning, deletions
// already in a committed snapshot dropped. A lookup asks the table, then
// the runs from newest to oldest.
//
// This rather than a sorted run and an in-memory delta rewritten on every
// spill: the merge cost is paid once every MaxRuns spills, not every
// spill, and a lookup stays one bloom probe per run and at most one block
// read for a run that holds the key. The price is a lookup that checks up
// to MaxRuns bloom filters. In memory a key costs about 96 bytes (a
// 9-byte key), spilled about 2 in memory and 14 on disk.
//
// Put and Delete look the key up first, so they return the offset they
// replace (the row the writer must delete), and the index counts its live
// keys exactly.
//
// # Snapshots
//
// WriteSnapshot writes the index to an io.Writer in the format described
// in format.go (a header, CRC-checked blocks of sorted entries, a
// CRC-checked footer and a trailer; one format for snapshots and spilled
// runs): either a full snapshot of every live key, or a delta of the keys
// changed since the last committed snapshot, deleted ones included, named
// by that snapshot's sequence number and checksum. Every change carries
// the epoch it was made in, and a delta takes the changes of the epochs
// after the last committed one: it writes the keys changed, reading the
// in-memory table and only the runs that hold such changes. A full snapshot is written first, after MaxDeltas
// deltas, and when the deltas since the last full one add up to half its
// size, so a new owner reads at most a bounded chain. Commit makes a
// written snapshot the base of the next; a snapshot never committed (its
// upload or the table commit failed) is simply written again, larger.
// Load reads a chain (a full snapshot and the deltas after it), checking
// every byte and the links, into a new index: the full snapshot into the
// in-memory table when the memory limit holds it, else copied as a run
// as it is (it is sorted, in the runs' format), and then the deltas.
package keyindex
