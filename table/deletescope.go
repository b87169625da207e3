package table

import (
	"errors"
	"fmt"
	"math"
	"reflect"

	"github.com/apache/iceberg-go"
)

// ErrRewriteDeletes is wrapped by the error of a Rewrite (RewriteApplying)
// of which an input has a delete file that may apply to it and that the
// plan did not apply: another engine deleted rows of it (DELETE in Spark
// or Trino, merge-on-read) after the compaction planned. Committing would
// bring those rows back, since the new file holds the input's rows but
// those the plan's deletes delete, and the delete file names the old file
// (a position delete or deletion vector) or is older than the new file
// (an equality delete). Retrying cannot help; a new plan applies it.
var ErrRewriteDeletes = errors.New("another engine's delete files may apply to inputs of the rewrite, which would bring their deleted rows back")

// filePathFieldID is the field id of the file_path column of position
// delete files; its lower and upper bounds, when equal, name the one data
// file the delete file applies to.
const filePathFieldID = 2147483546

// deleteFile is a live delete file of a snapshot, with what says which
// data files it may apply to (the table spec's "Scan Planning").
type deleteFile struct {
	// path identifies the delete file (deleteKey).
	path string
	// seq is the data sequence number; math.MaxInt64 when unknown, so
	// that it applies to every data file.
	seq int64
	// records is the delete file's record count: for a deletion vector
	// or a position delete file that names one data file, how many rows
	// of it it deletes (at most).
	records int64
	// global: an equality delete of an unpartitioned spec (or of a spec
	// the metadata does not have), which applies to every partition.
	global    bool
	partition map[int]any
	// target is the one data file a position delete (or deletion
	// vector) applies to: its referenced_data_file, or its file_path
	// column's equal lower and upper bounds. Empty when not known.
	target string
}

// deleteScope holds the live delete files of a snapshot and tells, for a
// data file, which of them may apply to it. It errs towards applying: a
// data file it says a delete may apply to is only left out of a
// compaction, while one wrongly said free of deletes would be rewritten
// without them, bringing deleted rows back.
type deleteScope struct {
	byTarget   map[string][]deleteFile
	positional []deleteFile // without a target
	equality   []deleteFile
}

// add adds the delete file of manifest entry e; specOf finds a partition
// spec of the table by its id (nil when there is none).
func (s *deleteScope) add(specOf func(int) *iceberg.PartitionSpec, e iceberg.ManifestEntry) {
	df := e.DataFile()
	d := deleteFile{path: deleteKey(df), seq: e.SequenceNum(), partition: df.Partition(), records: df.Count()}
	if d.seq < 0 {
		d.seq = math.MaxInt64
	}
	if s.byTarget == nil {
		s.byTarget = map[string][]deleteFile{}
	}
	if df.ContentType() == iceberg.EntryContentEqDeletes {
		spec := specOf(int(df.SpecID()))
		d.global = spec == nil || spec.IsUnpartitioned()
		s.equality = append(s.equality, d)
		return
	}
	// Position deletes and deletion vectors (any content that is not
	// data or equality deletes is taken for one: it applies more).
	if ref := df.ReferencedDataFile(); ref != nil && *ref != "" {
		d.target = *ref
	} else if lo, hi := df.LowerBoundValues()[filePathFieldID], df.UpperBoundValues()[filePathFieldID]; lo != nil && string(lo) == string(hi) {
		d.target = string(lo)
	}
	if d.target != "" {
		s.byTarget[d.target] = append(s.byTarget[d.target], d)
		return
	}
	s.positional = append(s.positional, d)
}

// deleteKey identifies a delete file among a snapshot's: its location,
// and for a deletion vector (a blob of a Puffin file that may hold the
// vectors of several data files) its blob's offset too.
func deleteKey(df iceberg.DataFile) string {
	if off := df.ContentOffset(); off != nil {
		return fmt.Sprintf("%s#%d", df.FilePath(), *off)
	}
	return df.FilePath()
}

// applying returns the keys (deleteKey: locations, with a deletion
// vector's offset) of the delete files that may apply to
// the data file df of data sequence number seq (negative when unknown):
//   - a position delete or deletion vector whose data sequence number is
//     seq or more, and that names df (referenced_data_file, or its
//     file_path bounds), or names no file and is of df's partition;
//   - an equality delete whose data sequence number is more than seq, of
//     df's partition or of an unpartitioned spec.
//
// The spec matches partitions by spec id and values; readers differ
// (iceberg-go compares the values alone, and applies a delete to a data
// file of an empty partition tuple), so the values alone are compared,
// and values of different types, an empty tuple on either side, or a NaN
// count as the same partition. A position delete that names df applies
// whatever its partition, as in Java's DeleteFileIndex.
func (s *deleteScope) applying(seq int64, df iceberg.DataFile) []string {
	if seq < 0 {
		seq = math.MinInt64
	}
	var out []string
	for _, d := range s.byTarget[df.FilePath()] {
		if seq <= d.seq {
			out = append(out, d.path)
		}
	}
	for _, d := range s.positional {
		if seq <= d.seq && samePartition(d.partition, df.Partition()) {
			out = append(out, d.path)
		}
	}
	for _, d := range s.equality {
		if seq < d.seq && (d.global || samePartition(d.partition, df.Partition())) {
			out = append(out, d.path)
		}
	}
	return out
}

// named is how many rows of the data file df of data sequence number seq
// the deletion vectors and position delete files that name it (and apply
// to it) say they delete: a bound from above of the rows they delete,
// without reading them. Deletes that name no file do not count.
func (s *deleteScope) named(seq int64, df iceberg.DataFile) int64 {
	if seq < 0 {
		seq = math.MinInt64
	}
	var n int64
	for _, d := range s.byTarget[df.FilePath()] {
		if seq <= d.seq {
			n += max(d.records, 0)
		}
	}
	return n
}

// samePartition reports whether the partition tuples a and b may be the
// same: equal, or not comparable with certainty.
func samePartition(a, b map[int]any) bool {
	if len(a) == 0 || len(b) == 0 {
		return true
	}
	if len(a) != len(b) {
		return false
	}
	for id, x := range a {
		y, ok := b[id]
		if !ok {
			return false
		}
		if !mayEqual(x, y) {
			return false
		}
	}
	return true
}

// mayEqual reports whether two partition values may be equal: the same,
// of different types (which one reader or another might convert), or a
// NaN.
func mayEqual(x, y any) bool {
	if x == nil || y == nil {
		return x == nil && y == nil
	}
	vx, vy := reflect.ValueOf(x), reflect.ValueOf(y)
	if vx.Type() != vy.Type() {
		return true
	}
	switch vx.Kind() {
	case reflect.Float32, reflect.Float64:
		fx, fy := vx.Float(), vy.Float()
		return fx == fy || math.IsNaN(fx) || math.IsNaN(fy)
	}
	return reflect.DeepEqual(x, y)
}
