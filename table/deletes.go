package table

import (
	"context"
	"fmt"
	"math"
	"reflect"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table/dv"

	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/reader"
)

// Positions is a set of row positions of a data file (a row's index in
// the file, from 0): the rows the table deleted from it.
type Positions struct {
	b *dv.RoaringPositionBitmap
}

// Contains says whether the row at position row is in the set.
func (p *Positions) Contains(row int64) bool {
	return row >= 0 && p.b.Contains(uint64(row))
}

// Len is the number of positions in the set.
func (p *Positions) Len() int64 { return p.b.Cardinality() }

// snapFile is a file of a snapshot (data or delete) with the data
// sequence number its manifest entry gives it.
type snapFile struct {
	df  iceberg.DataFile
	seq int64
}

// maxDeleteFileMemory bounds what reading one position delete file may
// hold: its pages of file_path and pos.
const maxDeleteFileMemory = 256 << 20

// applyDeletes finds, by the Iceberg specification's rules of scan
// planning, the rows that the delete files of a snapshot delete from its
// data files, and returns them by data file location. A file no delete
// applies to has no entry.
//
// A deletion vector (a Puffin blob, format version 3) applies to the data
// file it references when that file's data sequence number is at most the
// vector's and both are in the same partition (spec and values). A
// position delete file applies to a data file when the file is the one it
// references (if it references one), the data file's data sequence number
// is at most the delete file's, and both are in the same partition. The
// rows of a position delete file name their data file: a row naming a
// file that is not live, or was added after the delete, is not applied.
// A position delete or deletion vector that names a live data file of
// another partition, which the specification would not apply, is refused
// as inconsistent metadata: not applying it could bring back rows an
// engine meant to delete. Equality delete files are applied by
// applyEqualityDeletes. specs resolves a partition spec id.
//
// The specification also says that a data file with a deletion vector
// takes no position delete file, because the vector, when written, must
// hold every position those files delete. Here both are applied: on a
// table that keeps that rule the result is the same, and on one whose
// writer did not (iceberg-go v0.7.0, deleting with vectors in a table
// upgraded from format version 2, writes a vector without the file's
// earlier position deletes) no row that was deleted comes back.
func applyDeletes(ctx context.Context, fsys icebergio.IO, specs func(int32) *iceberg.PartitionSpec, what string, snapID int64, data, deletes []snapFile) (map[string]*Positions, error) {
	if len(deletes) == 0 {
		return nil, nil
	}
	byPath := make(map[string]*snapFile, len(data))
	for i := range data {
		byPath[data[i].df.FilePath()] = &data[i]
	}
	// Deletion vectors first: they are read whole, position delete files
	// add to them.
	vectors := map[string]*snapFile{}
	var positional, equality []snapFile
	for i := range deletes {
		d := &deletes[i]
		df := d.df
		switch {
		case df.ContentType() == iceberg.EntryContentEqDeletes:
			equality = append(equality, *d)
		case df.ContentType() != iceberg.EntryContentPosDeletes:
			return nil, fmt.Errorf("table %s, snapshot %d: %w: delete file %s has content %v, which replay does not know", what, snapID, ErrDeleteFiles, df.FilePath(), df.ContentType())
		case df.FileFormat() == iceberg.PuffinFile:
			ref := df.ReferencedDataFile()
			if ref == nil {
				return nil, fmt.Errorf("table %s, snapshot %d: deletion vector %s has no referenced_data_file, which the specification requires", what, snapID, df.FilePath())
			}
			target, ok := byPath[*ref]
			if ok && target.seq <= d.seq && !inPartitionOf(target.df, d.df) {
				return nil, fmt.Errorf("table %s, snapshot %d: deletion vector %s: %w", what, snapID, df.FilePath(), otherPartition(d, target))
			}
			if !ok || !deleteApplies(target, d) {
				continue // its file is no longer live, or it does not apply
			}
			if prev, ok := vectors[*ref]; ok {
				return nil, fmt.Errorf("table %s, snapshot %d: data file %s has two deletion vectors (in %s and %s); the specification allows one", what, snapID, *ref, prev.df.FilePath(), df.FilePath())
			}
			vectors[*ref] = d
		case df.FileFormat() == iceberg.ParquetFile:
			positional = append(positional, *d)
		default:
			return nil, fmt.Errorf("table %s, snapshot %d: %w: position delete file %s is %s; replay reads Parquet position delete files and Puffin deletion vectors", what, snapID, ErrDeleteFiles, df.FilePath(), df.FileFormat())
		}
	}
	out := map[string]*Positions{}
	for path, d := range vectors {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		b, err := dv.ReadDV(fsys, d.df)
		if err != nil {
			return nil, fmt.Errorf("table %s, snapshot %d: deletion vector of %s in %s: %w", what, snapID, path, d.df.FilePath(), err)
		}
		out[path] = &Positions{b: b}
	}
	for i := range positional {
		d := &positional[i]
		ref := d.df.ReferencedDataFile()
		if ref != nil {
			f, ok := byPath[*ref]
			if !ok || f.seq > d.seq {
				continue // its file is no longer live, or it does not apply
			}
			if !inPartitionOf(f.df, d.df) {
				return nil, fmt.Errorf("table %s, snapshot %d: position delete file %s: %w", what, snapID, d.df.FilePath(), otherPartition(d, f))
			}
		}
		// Each row names its data file: it deletes a row of it when the
		// delete file applies to it.
		apply := func(path []byte, pos int64) error {
			f, ok := byPath[string(path)]
			switch {
			case !ok || f.seq > d.seq || ref != nil && *ref != f.df.FilePath():
				return nil // not live, or added after the delete
			case !inPartitionOf(f.df, d.df):
				return otherPartition(d, f)
			}
			p := out[f.df.FilePath()]
			if p == nil {
				p = &Positions{b: dv.NewRoaringPositionBitmap()}
				out[f.df.FilePath()] = p
			}
			p.b.Set(uint64(pos))
			return nil
		}
		if err := readPositionDeletes(ctx, fsys, d.df, apply); err != nil {
			return nil, fmt.Errorf("table %s, snapshot %d: position delete file %s: %w", what, snapID, d.df.FilePath(), err)
		}
	}
	if err := applyEqualityDeletes(ctx, fsys, specs, data, equality, out); err != nil {
		return nil, fmt.Errorf("table %s, snapshot %d: %w", what, snapID, err)
	}
	for path, p := range out {
		if p.b.IsEmpty() {
			delete(out, path)
		}
	}
	return out, nil
}

// otherPartition is the error of a delete d that names a live data file
// f of another partition than its own: the specification does not apply
// it, and not applying it would bring back rows that an engine meant to
// delete, so the table's metadata is taken as inconsistent.
func otherPartition(d, f *snapFile) error {
	return fmt.Errorf("it deletes rows of data file %s, which is in another partition (spec %d %v, the delete's spec %d %v): the table's metadata is inconsistent, and replay refuses rather than bring deleted rows back or delete others",
		f.df.FilePath(), f.df.SpecID(), f.df.Partition(), d.df.SpecID(), d.df.Partition())
}

// deleteApplies says whether a position delete or deletion vector d may
// apply to data file f by their data sequence numbers and partitions.
func deleteApplies(f, d *snapFile) bool {
	return f.seq <= d.seq && inPartitionOf(f.df, d.df)
}

// inPartitionOf says whether two files are in the same partition: the
// same spec and equal values (partitionValue).
func inPartitionOf(a, b iceberg.DataFile) bool {
	if a.SpecID() != b.SpecID() {
		return false
	}
	pa, pb := a.Partition(), b.Partition()
	if len(pa) != len(pb) {
		return false
	}
	for k, va := range pa {
		vb, ok := pb[k]
		if !ok || !reflect.DeepEqual(partitionValue(va), partitionValue(vb)) {
			return false
		}
	}
	return true
}

// partitionValue is a value of a partition tuple in a form that compares
// by value, whichever Go type the manifest's decoder gave it: integers
// (iceberg.Date and the other named integer types among them) as int64,
// floating-point numbers as float64, byte strings as strings.
func partitionValue(v any) any {
	switch r := reflect.ValueOf(v); r.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return r.Int()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if u := r.Uint(); u <= math.MaxInt64 {
			return int64(u)
		}
	case reflect.Float32, reflect.Float64:
		return r.Float()
	case reflect.String:
		return r.String()
	case reflect.Slice:
		if r.Type().Elem().Kind() == reflect.Uint8 {
			return string(r.Bytes())
		}
	}
	return v
}

// Field ids of a position delete file's columns, which the specification
// reserves.
const (
	posDeleteFilePathID = 2147483546
	posDeletePosID      = 2147483545
)

// readPositionDeletes reads a Parquet position delete file and calls
// apply with each of its (file_path, pos) rows; path is valid during the
// call only.
func readPositionDeletes(ctx context.Context, fsys icebergio.IO, df iceberg.DataFile, apply func(path []byte, pos int64) error) error {
	file, err := fsys.Open(df.FilePath())
	if err != nil {
		return err
	}
	defer file.Close()
	st, err := file.Stat()
	if err != nil {
		return err
	}
	f, err := reader.Open(file, st.Size(), reader.MaxMemory(maxDeleteFileMemory))
	if err != nil {
		return err
	}
	sch := f.Schema()
	pathLeaf, posLeaf := sch.Leaf("file_path"), sch.Leaf("pos")
	switch {
	case pathLeaf == nil || posLeaf == nil:
		return fmt.Errorf("no file_path or pos column (field ids %d, %d): not a position delete file", posDeleteFilePathID, posDeletePosID)
	case pathLeaf.Physical != meta.TypeByteArray || pathLeaf.MaxRep != 0:
		return fmt.Errorf("column file_path is %s, want a string", pathLeaf.TypeName())
	case posLeaf.Physical != meta.TypeInt64 || posLeaf.MaxRep != 0:
		return fmt.Errorf("column pos is %s, want a long", posLeaf.TypeName())
	}
	var row int64
	for g := range f.Metadata().RowGroups {
		if err := ctx.Err(); err != nil {
			return err
		}
		cur, err := f.ColumnCursors(g, []int{pathLeaf.Column, posLeaf.Column})
		if err != nil {
			return fmt.Errorf("row group %d: %w", g, err)
		}
		err = func() error {
			defer cur[0].Release()
			defer cur[1].Release()
			paths, poss := cur[0], cur[1]
			for !paths.EOF() {
				if poss.EOF() {
					return fmt.Errorf("row %d: columns file_path and pos have different lengths", row)
				}
				if !paths.HasValue() || !poss.HasValue() {
					return fmt.Errorf("row %d: file_path or pos is null", row)
				}
				if pos := poss.Int64(); pos < 0 {
					return fmt.Errorf("row %d: position %d is negative", row, pos)
				} else if err := apply(paths.Bytes(), pos); err != nil {
					return fmt.Errorf("row %d: %w", row, err)
				}
				if err := paths.Advance(); err != nil {
					return err
				}
				if err := poss.Advance(); err != nil {
					return err
				}
				row++
			}
			if !poss.EOF() {
				return fmt.Errorf("row %d: columns file_path and pos have different lengths", row)
			}
			return nil
		}()
		if err != nil {
			return fmt.Errorf("row group %d: %w", g, err)
		}
	}
	return nil
}
