package table

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table/dv"

	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/reader"
	"github.com/pqsink/pqsink/schema"
)

// maxEqualityKeys bounds the rows of the equality delete files that apply
// to one data file, which are held as a set while the data file is read:
// a GDPR delete is a few keys, and 10 million keys of a few dozen bytes
// stay under a GiB.
const maxEqualityKeys = 10_000_000

// maxRows bounds the rows a data file may say it has when an equality
// delete deletes them all at once (a bitmap of the whole range): 2^32,
// more than any Parquet writer puts in one file.
const maxRows = 1 << 32

// applyEqualityDeletes adds to out the positions of the rows of the data
// files that the equality delete files eq delete: a row whose values of a
// delete file's equality fields equal those of one of its rows (a null
// equal to a null). A delete file applies to a data file, by the
// specification's scan planning, when the data file's data sequence
// number is less than the delete file's (not equal: an equality delete
// does not delete rows added in its own commit) and both are in the same
// partition (spec and values), or the delete file's spec is unpartitioned
// (it applies to every partition). specs resolves a spec id.
//
// The equality fields are found by field id in both files. A data file
// without one of them (written before the field was added) holds null in
// it. Fields of floating-point type, repeated fields, and a field whose
// type differs between the two files in more than Iceberg's int to long
// promotion are refused, naming the files.
func applyEqualityDeletes(ctx context.Context, fsys icebergio.IO, specs func(int32) *iceberg.PartitionSpec, data, eq []snapFile, out map[string]*Positions) error {
	for i := range data {
		f := &data[i]
		var deletes []*snapFile
		for j := range eq {
			d := &eq[j]
			if f.seq < d.seq && (inPartitionOf(f.df, d.df) || unpartitioned(specs, d.df.SpecID())) {
				deletes = append(deletes, d)
			}
		}
		if len(deletes) == 0 {
			continue
		}
		// The delete files of one set of equality fields are read into one
		// set of keys, and the data file is read once for each set.
		groups := map[string][]*snapFile{}
		var order []string
		for _, d := range deletes {
			ids := d.df.EqualityFieldIDs()
			if len(ids) == 0 {
				return fmt.Errorf("equality delete file %s has no equality field ids", d.df.FilePath())
			}
			k := fmt.Sprint(ids)
			if groups[k] == nil {
				order = append(order, k)
			}
			groups[k] = append(groups[k], d)
		}
		for _, k := range order {
			if err := ctx.Err(); err != nil {
				return err
			}
			ds := groups[k]
			ids := ds[0].df.EqualityFieldIDs()
			keys := map[string]struct{}{}
			var types []*schema.Node
			for _, d := range ds {
				ts, err := readEqualityKeys(ctx, fsys, d.df, ids, keys)
				if err != nil {
					return fmt.Errorf("equality delete file %s: %w", d.df.FilePath(), err)
				}
				if types == nil {
					types = ts
				}
			}
			if len(keys) == 0 {
				continue
			}
			p := out[f.df.FilePath()]
			if p == nil {
				p = &Positions{b: dv.NewRoaringPositionBitmap()}
				out[f.df.FilePath()] = p
			}
			if err := matchEqualityKeys(ctx, fsys, f.df, ids, types, keys, p.b); err != nil {
				return fmt.Errorf("data file %s, equality delete file %s: %w", f.df.FilePath(), ds[0].df.FilePath(), err)
			}
		}
	}
	return nil
}

// unpartitioned says whether the spec of id has no fields.
func unpartitioned(specs func(int32) *iceberg.PartitionSpec, id int32) bool {
	s := specs(id)
	return s != nil && s.IsUnpartitioned()
}

// equalityLeaves finds the leaves of the field ids in a file's schema; a
// missing field is nil.
func equalityLeaves(sch *schema.Schema, ids []int) ([]*schema.Node, error) {
	out := make([]*schema.Node, len(ids))
	for i, id := range ids {
		for _, l := range sch.Leaves() {
			if l.HasFieldID && int(l.FieldID) == id {
				out[i] = l
			}
		}
		if out[i] == nil {
			continue
		}
		switch l := out[i]; {
		case l.MaxRep > 0:
			return nil, fmt.Errorf("equality field %d (%s) is in a list or map", id, l.PathString())
		case l.Physical == meta.TypeFloat || l.Physical == meta.TypeDouble:
			return nil, fmt.Errorf("equality field %d (%s) is a floating-point number, which Iceberg does not allow", id, l.PathString())
		case l.Physical == meta.TypeInt96:
			return nil, fmt.Errorf("equality field %d (%s) is an INT96", id, l.PathString())
		}
	}
	return out, nil
}

// sameValues says whether values of the two leaves compare as they are:
// the same physical type and logical type, or INT32 and INT64 integers
// (Iceberg's int to long promotion).
func sameValues(a, b *schema.Node) bool {
	integer := func(n *schema.Node) bool {
		return (n.Physical == meta.TypeInt32 || n.Physical == meta.TypeInt64) &&
			(n.Logical.Kind == schema.None || n.Logical.Kind == schema.Int && n.Logical.Signed)
	}
	if integer(a) && integer(b) {
		return true
	}
	return a.Logical == b.Logical && a.Physical == b.Physical && a.Length == b.Length
}

// appendKey appends the current value of c (nil: the field is absent,
// null) to a key, in a form where two values are equal when their keys
// are: INT32 widened to INT64, byte strings prefixed by their length.
func appendKey(dst []byte, c *reader.ColumnCursor) []byte {
	if c == nil || !c.HasValue() {
		return append(dst, 0)
	}
	dst = append(dst, 1)
	switch c.Leaf().Physical {
	case meta.TypeBoolean:
		v, i := c.Values()
		if v.Bool[i] {
			return append(dst, 1)
		}
		return append(dst, 0)
	case meta.TypeInt32:
		return binary.LittleEndian.AppendUint64(dst, uint64(int64(c.Int32())))
	case meta.TypeInt64:
		return binary.LittleEndian.AppendUint64(dst, uint64(c.Int64()))
	default: // BYTE_ARRAY, FIXED_LEN_BYTE_ARRAY
		b := c.Bytes()
		dst = binary.AppendUvarint(dst, uint64(len(b)))
		return append(dst, b...)
	}
}

// openParquet opens a file of the table as Parquet; close closes it.
func openParquet(fsys icebergio.IO, path string) (*reader.File, func(), error) {
	file, err := fsys.Open(path)
	if err != nil {
		return nil, nil, err
	}
	st, err := file.Stat()
	if err != nil {
		file.Close()
		return nil, nil, err
	}
	f, err := reader.Open(file, st.Size(), reader.MaxMemory(maxDeleteFileMemory))
	if err != nil {
		file.Close()
		return nil, nil, err
	}
	return f, func() { file.Close() }, nil
}

// eachRow calls fn for each row of f with the cursors of the leaves (nil
// for an absent one), positioned at the row, and its position in the
// file.
func eachRow(ctx context.Context, f *reader.File, leaves []*schema.Node, fn func(cur []*reader.ColumnCursor, row int64) error) error {
	var cols []int
	for _, l := range leaves {
		if l != nil {
			cols = append(cols, l.Column)
		}
	}
	var row int64
	for g, rg := range f.Metadata().RowGroups {
		if err := ctx.Err(); err != nil {
			return err
		}
		got, err := f.ColumnCursors(g, cols)
		if err != nil {
			return fmt.Errorf("row group %d: %w", g, err)
		}
		cur := make([]*reader.ColumnCursor, len(leaves))
		j := 0
		for i, l := range leaves {
			if l != nil {
				cur[i] = got[j]
				j++
			}
		}
		err = func() error {
			for range rg.NumRows {
				for _, c := range got {
					if c.EOF() {
						return fmt.Errorf("%w: column %s ends before row %d", reader.ErrCorrupt, c.Leaf().PathString(), row)
					}
				}
				if err := fn(cur, row); err != nil {
					return err
				}
				for _, c := range got {
					if err := c.Advance(); err != nil {
						return fmt.Errorf("row %d: %w", row, err)
					}
				}
				row++
			}
			return nil
		}()
		for _, c := range got {
			c.Release()
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// readEqualityKeys adds the keys of the rows of an equality delete file
// to keys, and returns the leaves of its equality fields.
func readEqualityKeys(ctx context.Context, fsys icebergio.IO, df iceberg.DataFile, ids []int, keys map[string]struct{}) ([]*schema.Node, error) {
	if df.FileFormat() != iceberg.ParquetFile {
		return nil, fmt.Errorf("%w: it is %s; replay reads Parquet equality delete files", ErrDeleteFiles, df.FileFormat())
	}
	f, closeFile, err := openParquet(fsys, df.FilePath())
	if err != nil {
		return nil, err
	}
	defer closeFile()
	leaves, err := equalityLeaves(f.Schema(), ids)
	if err != nil {
		return nil, err
	}
	for i, l := range leaves {
		if l == nil {
			return nil, fmt.Errorf("no column has equality field id %d", ids[i])
		}
	}
	var key []byte
	err = eachRow(ctx, f, leaves, func(cur []*reader.ColumnCursor, row int64) error {
		key = key[:0]
		for _, c := range cur {
			key = appendKey(key, c)
		}
		if _, ok := keys[string(key)]; !ok {
			if len(keys) >= maxEqualityKeys {
				return fmt.Errorf("more than %d rows of equality deletes apply to one data file", maxEqualityKeys)
			}
			keys[string(key)] = struct{}{}
		}
		return nil
	})
	return leaves, err
}

// matchEqualityKeys sets in deleted the positions of the rows of data
// file df whose values of the equality fields ids make one of keys; types
// are the delete files' leaves of the fields.
func matchEqualityKeys(ctx context.Context, fsys icebergio.IO, df iceberg.DataFile, ids []int, types []*schema.Node, keys map[string]struct{}, deleted *dv.RoaringPositionBitmap) error {
	f, closeFile, err := openParquet(fsys, df.FilePath())
	if err != nil {
		return err
	}
	defer closeFile()
	leaves, err := equalityLeaves(f.Schema(), ids)
	if err != nil {
		return err
	}
	for i, l := range leaves {
		if l != nil && !sameValues(l, types[i]) {
			return fmt.Errorf("equality field %d is %s in the data file (%s) and %s in the delete file: replay compares values of one type", ids[i], l.TypeName(), l.PathString(), types[i].TypeName())
		}
	}
	if !slices.ContainsFunc(leaves, func(l *schema.Node) bool { return l != nil }) {
		// Every field is null in the file: one key for every row.
		key := make([]byte, len(ids))
		if _, ok := keys[string(key)]; !ok {
			return nil
		}
		if n := f.NumRows(); n < 0 || n > maxRows {
			// A bitmap of so many positions would take a long time.
			return fmt.Errorf("%w: the file says it has %d rows", reader.ErrCorrupt, n)
		}
		deleted.SetRange(0, uint64(f.NumRows()))
		return nil
	}
	var key []byte
	return eachRow(ctx, f, leaves, func(cur []*reader.ColumnCursor, row int64) error {
		key = key[:0]
		for _, c := range cur {
			key = appendKey(key, c)
		}
		if _, ok := keys[string(key)]; ok {
			deleted.Set(uint64(row))
		}
		return nil
	})
}
