// Package reader reads Parquet files: the footer, the pages of a column
// chunk, and whole records assembled from the columns.
//
// It reads every encoding (PLAIN, PLAIN_DICTIONARY and RLE_DICTIONARY, RLE,
// the deprecated BIT_PACKED levels, the DELTA encodings, BYTE_STREAM_SPLIT),
// every codec of package compress, data pages v1 and v2, the nested LIST and
// MAP shapes of LogicalTypes.md including the backward-compatible ones, and
// VARIANT columns, unshredded or shredded.
//
// The layers build on each other:
//
//   - Open reads and validates the footer of any io.ReaderAt of known size,
//     a local file or an object store's range reads.
//   - File.ColumnChunk iterates the decoded pages of one column chunk:
//     repetition and definition levels and typed values, dictionaries
//     resolved, in the representation of package writer/encoding.
//   - File.Rows assembles records as trees of Value, for a projection of
//     the columns, skipping row groups and pages that a simple predicate
//     rules out by their statistics and page index. A list of scalars is
//     held packed, as its pages decoded it, so that a record costs at most
//     twice its decoded values; its elements become Values when asked for.
//
// A file is untrusted input. Every offset, length and count the file
// declares is checked against the bytes that back it before it is used, so
// a corrupt or hostile file gives an error that says what is wrong and
// where, never a panic, and memory stays bounded by the read's budget
// (MaxMemory) rather than by the sizes the file claims: a read that would
// exceed it fails with an error wrapping ErrMemoryBudget, never ErrCorrupt.
package reader
