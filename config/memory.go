package config

// What a record costs the sink, measured with `pqsink bench --record-bytes`
// (one partition, records of 256 KiB to 64 MiB): the fetch response that
// kafka-go holds whole (and, for a compressed batch, once more
// decompressed), the record's copy in the fetch arena, the row group's
// column buffer (grown by doubling), the PLAIN page and its compressed
// copy, the upload part, and the garbage all of them leave for the
// collector, which the Go soft limit (memory.limit) lets grow up to the
// limit: peak RSS went 35 to 55 MiB over memory.limit with records of 5
// to 64 MiB. It stayed within 1.25 times the limit where the limit was at
// least 150 MiB plus 5 times the record (5 MiB: 188 MiB at 176 MiB, but
// 188 at 142; 10 MiB: 226 at 200; 24 MiB: 298 at 256; 50 MiB: 448 at 400;
// 64 MiB: 567 at 512), or 64 times the record (1 MiB: 73 to 79 MiB at 64
// MiB; 2 MiB: 136 at 128).
const (
	recordCost     = 5
	recordCostBase = 150 * mib
	smallRecord    = 64 // a record of 1/64 of memory.limit always fits
)

// MemoryForRecord is the smallest memory.limit that holds records of up to
// maxRecord bytes (max_record_bytes) within 1.25 times the limit.
func MemoryForRecord(maxRecord int64) int64 {
	return min(smallRecord*maxRecord, recordCost*maxRecord+recordCostBase)
}

// DefaultMaxRecordBytes is max_record_bytes when it is not set: 64MiB, or
// the largest record that limit holds (MemoryForRecord) if less, in whole
// KiB.
func DefaultMaxRecordBytes(limit int64) int64 {
	n := min(64*mib, max(limit/smallRecord, (limit-recordCostBase)/recordCost))
	return max(1, n&^(1<<10-1))
}
