package table

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/big"
	"unicode/utf8"

	"github.com/apache/iceberg-go"
	itable "github.com/apache/iceberg-go/table"

	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/schema"
)

// columnStats are one column's metrics over all row groups of a file.
type columnStats struct {
	size, values   int64
	nulls, nans    int64
	hasNulls       bool // every row group gave a null count
	hasNaNs        bool // every row group gave a NaN count
	lower, upper   []byte
	noLower        bool // some row group with values gave no usable lower bound
	noUpper        bool
	exactLo, exact bool // the bounds are the values themselves, not truncated
}

// dataFile describes f for the table tbl: path, size, record count, the
// partition tuple and the metrics of every column, all from the footer
// the sink wrote (no byte of the file is read). firstRowID, for format
// version 3, is the id of the file's first row.
func dataFile(tbl *itable.Table, f File, firstRowID *int64) (iceberg.DataFile, error) {
	ts := tbl.Schema()
	fileSchema, err := schema.FromElements(f.Footer.Schema)
	if err != nil {
		return nil, fmt.Errorf("footer schema: %w", err)
	}
	ws, err := withFieldIDs(fileSchema, ts, tbl.Metadata().Version())
	if err != nil {
		return nil, err
	}
	// A file written with field ids must carry the table's.
	for i, n := range fileSchema.Leaves() {
		w := ws.Leaves()[i]
		if n.HasFieldID && w.HasFieldID && n.FieldID != w.FieldID {
			return nil, fmt.Errorf("%w: column %s has field id %d, the table's is %d", ErrIncompatible, n.PathString(), n.FieldID, w.FieldID)
		}
	}
	leaves := ws.Leaves()
	stats := make([]columnStats, len(leaves))
	for i := range stats {
		stats[i] = columnStats{hasNulls: true, hasNaNs: true, exactLo: true, exact: true}
	}
	for g, rg := range f.Footer.RowGroups {
		if len(rg.Columns) != len(leaves) {
			return nil, fmt.Errorf("row group %d has %d columns, the schema %d", g, len(rg.Columns), len(leaves))
		}
		for i, cc := range rg.Columns {
			if cc.MetaData == nil {
				return nil, fmt.Errorf("row group %d, column %s: no metadata", g, leaves[i].PathString())
			}
			addChunk(&stats[i], leaves[i], ts, cc.MetaData)
		}
	}

	var (
		sizes  = map[int]int64{}
		values = map[int]int64{}
		nulls  = map[int]int64{}
		nans   = map[int]int64{}
		lower  = map[int][]byte{}
		upper  = map[int][]byte{}
	)
	byID := map[int]int{} // field id → leaf index
	for i, n := range leaves {
		if !n.HasFieldID || inVariant(n) {
			continue
		}
		id := int(n.FieldID)
		byID[id] = i
		st := stats[i]
		sizes[id], values[id] = st.size, st.values
		if st.hasNulls {
			nulls[id] = st.nulls
		}
		if t, _ := ts.FindTypeByID(id); isFloat(t) && st.hasNaNs {
			nans[id] = st.nans
		}
		if st.lower != nil && !st.noLower {
			lower[id] = st.lower
		}
		if st.upper != nil && !st.noUpper {
			upper[id] = st.upper
		}
	}

	spec, err := fileSpec(tbl, f)
	if err != nil {
		return nil, err
	}
	inPath, found, err := pathValues(tbl, spec, f.Location)
	if err != nil {
		return nil, err
	}
	part, err := partitionValues(&spec, ts, leaves, stats, byID, inPath, found)
	if err != nil {
		return nil, err
	}
	b, err := iceberg.NewDataFileBuilder(spec, iceberg.EntryContentData, f.Location, iceberg.ParquetFile,
		part, nil, nil, f.Footer.NumRows, f.Size)
	if err != nil {
		return nil, err
	}
	b.ColumnSizes(sizes).ValueCounts(values).NullValueCounts(nulls).NaNValueCounts(nans).
		LowerBoundValues(lower).UpperBoundValues(upper)
	var splits []int64
	for _, rg := range f.Footer.RowGroups {
		if rg.FileOffset != nil {
			splits = append(splits, *rg.FileOffset)
		}
	}
	if len(splits) == len(f.Footer.RowGroups) {
		b.SplitOffsets(splits)
	}
	if firstRowID != nil {
		b.FirstRowID(*firstRowID)
	}
	return b.Build(), nil
}

func inVariant(n *schema.Node) bool {
	for p := n.Parent(); p != nil; p = p.Parent() {
		if p.Logical.Kind == schema.Variant {
			return true
		}
	}
	return false
}

func isFloat(t iceberg.Type) bool {
	switch t.(type) {
	case iceberg.Float32Type, iceberg.Float64Type:
		return true
	}
	return false
}

// addChunk adds one column chunk's metadata to st.
func addChunk(st *columnStats, n *schema.Node, ts *iceberg.Schema, md *meta.ColumnMetaData) {
	st.size += md.TotalCompressedSize
	st.values += md.NumValues
	s := md.Statistics
	if s == nil || s.NullCount == nil {
		st.hasNulls = false
	} else {
		st.nulls += *s.NullCount
	}
	if s == nil || s.NanCount == nil {
		st.hasNaNs = false
	} else {
		st.nans += *s.NanCount
	}
	// Bounds of values inside lists and maps are left out, as Iceberg's
	// own writers do; so are those of columns without an id.
	if !n.HasFieldID || n.MaxRep > 0 || inVariant(n) {
		st.noLower, st.noUpper = true, true
		return
	}
	var nonNull bool
	if s != nil && s.NullCount != nil {
		nonNull = *s.NullCount < md.NumValues
	} else {
		nonNull = md.NumValues > 0
	}
	if !nonNull {
		return // an all-null chunk bounds nothing
	}
	t, _ := ts.FindTypeByID(int(n.FieldID))
	if s == nil || s.MinValue == nil {
		st.noLower = true
	} else if lo, ok := bound(n, t, s.MinValue, s.IsMinValueExact == nil || *s.IsMinValueExact); !ok {
		st.noLower = true
	} else {
		if s.IsMinValueExact != nil && !*s.IsMinValueExact {
			st.exactLo = false
		}
		if st.lower == nil || compareBound(t, lo, st.lower) < 0 {
			st.lower = lo
		}
	}
	if s == nil || s.MaxValue == nil {
		st.noUpper = true
	} else if hi, ok := bound(n, t, s.MaxValue, s.IsMaxValueExact == nil || *s.IsMaxValueExact); !ok {
		st.noUpper = true
	} else {
		if s.IsMaxValueExact != nil && !*s.IsMaxValueExact {
			st.exact = false
		}
		if st.upper == nil || compareBound(t, hi, st.upper) > 0 {
			st.upper = hi
		}
	}
}

// bound converts a Parquet statistics value (PLAIN encoding, without the
// length of a BYTE_ARRAY) of leaf n into Iceberg's single-value
// serialization for the table type t: little-endian numbers of t's width
// (an INT32 under a long column widened to 8 bytes, a FLOAT under a double
// to a double), microseconds for TIMESTAMP(MILLIS), decimals as the
// shortest big-endian two's complement, strings and binaries as their
// bytes. ok is false for a value Iceberg cannot take as a bound: a
// truncated string that is not valid UTF-8, or a type this does not know.
func bound(n *schema.Node, t iceberg.Type, v []byte, exact bool) ([]byte, bool) {
	switch tt := t.(type) {
	case iceberg.BooleanType:
		if len(v) >= 1 {
			return []byte{v[0] & 1}, true
		}
	case iceberg.Int32Type, iceberg.DateType:
		if len(v) == 4 {
			return bytes.Clone(v), true
		}
	case iceberg.Int64Type:
		switch len(v) {
		case 4:
			return binary.LittleEndian.AppendUint64(nil, uint64(int64(int32(binary.LittleEndian.Uint32(v))))), true
		case 8:
			return bytes.Clone(v), true
		}
	case iceberg.TimeType, iceberg.TimestampType, iceberg.TimestampTzType, iceberg.TimestampNsType, iceberg.TimestampTzNsType:
		if len(v) != 8 {
			return nil, false
		}
		x := int64(binary.LittleEndian.Uint64(v))
		if n.Logical.Unit == schema.Millis {
			if x > math.MaxInt64/1000 || x < math.MinInt64/1000 {
				return nil, false
			}
			x *= 1000
		}
		return binary.LittleEndian.AppendUint64(nil, uint64(x)), true
	case iceberg.Float32Type:
		if len(v) == 4 {
			return bytes.Clone(v), true
		}
	case iceberg.Float64Type:
		switch len(v) {
		case 4:
			f := float64(math.Float32frombits(binary.LittleEndian.Uint32(v)))
			return binary.LittleEndian.AppendUint64(nil, math.Float64bits(f)), true
		case 8:
			return bytes.Clone(v), true
		}
	case iceberg.StringType:
		if exact || utf8.Valid(v) {
			return bytes.Clone(v), true
		}
	case iceberg.BinaryType, iceberg.FixedType, iceberg.UUIDType:
		return bytes.Clone(v), true
	case iceberg.DecimalType:
		_ = tt
		var x *big.Int
		switch n.Physical {
		case meta.TypeInt32:
			if len(v) != 4 {
				return nil, false
			}
			x = big.NewInt(int64(int32(binary.LittleEndian.Uint32(v))))
		case meta.TypeInt64:
			if len(v) != 8 {
				return nil, false
			}
			x = big.NewInt(int64(binary.LittleEndian.Uint64(v)))
		default:
			x = fromTwos(v)
		}
		return toTwos(x), true
	}
	return nil, false
}

// fromTwos reads a big-endian two's complement integer.
func fromTwos(b []byte) *big.Int {
	x := new(big.Int).SetBytes(b)
	if len(b) > 0 && b[0]&0x80 != 0 {
		x.Sub(x, new(big.Int).Lsh(big.NewInt(1), uint(8*len(b))))
	}
	return x
}

// toTwos writes x as the shortest big-endian two's complement.
func toTwos(x *big.Int) []byte {
	n := x.BitLen()/8 + 1
	if x.Sign() < 0 {
		// -2^(8k-1) fits k bytes; BitLen of its magnitude is 8k-1+1.
		m := new(big.Int).Add(x, big.NewInt(1))
		n = m.BitLen()/8 + 1
	}
	b := make([]byte, n)
	y := new(big.Int).Set(x)
	if x.Sign() < 0 {
		y.Add(y, new(big.Int).Lsh(big.NewInt(1), uint(8*n)))
	}
	y.FillBytes(b)
	return b
}

// compareBound orders two bounds of type t in Iceberg's serialization.
func compareBound(t iceberg.Type, a, b []byte) int {
	switch t.(type) {
	case iceberg.BooleanType:
		return int(a[0]) - int(b[0])
	case iceberg.Int32Type, iceberg.DateType:
		x, y := int32(binary.LittleEndian.Uint32(a)), int32(binary.LittleEndian.Uint32(b))
		return cmpOrdered(x, y)
	case iceberg.Int64Type, iceberg.TimeType, iceberg.TimestampType, iceberg.TimestampTzType, iceberg.TimestampNsType, iceberg.TimestampTzNsType:
		x, y := int64(binary.LittleEndian.Uint64(a)), int64(binary.LittleEndian.Uint64(b))
		return cmpOrdered(x, y)
	case iceberg.Float32Type:
		return cmpOrdered(math.Float32frombits(binary.LittleEndian.Uint32(a)), math.Float32frombits(binary.LittleEndian.Uint32(b)))
	case iceberg.Float64Type:
		return cmpOrdered(math.Float64frombits(binary.LittleEndian.Uint64(a)), math.Float64frombits(binary.LittleEndian.Uint64(b)))
	case iceberg.DecimalType:
		return fromTwos(a).Cmp(fromTwos(b))
	}
	return bytes.Compare(a, b)
}

func cmpOrdered[T int32 | int64 | float32 | float64](x, y T) int {
	switch {
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}

// partitionValues derives the file's partition tuple. The sink writes
// each value in the file's path (PathField), which is where it is read
// from when the path has it (path, with found saying which fields it
// has); the bounds of the source column must then agree with it where
// they tell a partition value: exact, and transforming to one value (a
// bucket, which does not preserve order, only from a single value). A
// file without the path's folders (one the sink did not name) takes its
// tuple from the bounds alone. A column with only nulls has the null
// partition value; one with nulls and values spans two partitions.
func partitionValues(spec *iceberg.PartitionSpec, ts *iceberg.Schema, leaves []*schema.Node, stats []columnStats, byID map[int]int, path map[int]any, found map[int]bool) (map[int]any, error) {
	out := map[int]any{}
	for _, pf := range spec.Fields() {
		v, ok, err := boundsValue(pf, ts, leaves, stats, byID)
		switch {
		case err != nil:
			return nil, err
		case found[pf.FieldID] && ok && !samePartitionValue(v, path[pf.FieldID]):
			return nil, fmt.Errorf("partition field %s: the file's path says %v, its column's bounds %v", pf.Name, path[pf.FieldID], v)
		case found[pf.FieldID]:
			out[pf.FieldID] = path[pf.FieldID]
		case !ok:
			name, _ := ts.FindColumnName(pf.SourceID())
			return nil, fmt.Errorf("partition field %s: column %s has no exact bounds that transform to one value, and the file's path has no %s folder", pf.Name, name, pf.Name)
		default:
			out[pf.FieldID] = v
		}
	}
	return out, nil
}

// hasColumnOf reports whether the file, whose leaf columns are leaves,
// has the column of the table's field id, or one of that name (without
// the table's id: refused where the ids are checked).
func hasColumnOf(ts *iceberg.Schema, id int, leaves []*schema.Node) bool {
	name, _ := ts.FindColumnName(id)
	for _, l := range leaves {
		if l.FieldID == int32(id) || l.PathString() == name {
			return true
		}
	}
	return false
}

// boundsValue is the partition value of pf that the bounds of its source
// column tell; ok is false when they tell none (not exact, or a bucket of
// more than one value). The error says the file holds more than one.
func boundsValue(pf iceberg.PartitionField, ts *iceberg.Schema, leaves []*schema.Node, stats []columnStats, byID map[int]int) (any, bool, error) {
	src := pf.SourceID()
	i, ok := byID[src]
	name, _ := ts.FindColumnName(src)
	if !ok && !hasColumnOf(ts, src, leaves) {
		// A file without the column (one of an Avro writer schema that
		// lacks the field) holds nulls in it for every row, as readers
		// read a column that a data file lacks.
		return nil, true, nil
	}
	if !ok || leaves[i].MaxRep > 0 {
		return nil, false, fmt.Errorf("partition field %s: source column %s is not a column of the file outside lists and maps", pf.Name, name)
	}
	st := stats[i]
	switch {
	case !st.hasNulls:
		return nil, false, nil
	case st.nulls == st.values:
		return nil, true, nil
	case st.nulls > 0:
		return nil, false, fmt.Errorf("partition field %s: column %s has nulls and values: the file spans two partitions", pf.Name, name)
	case st.lower == nil || st.upper == nil || st.noLower || st.noUpper || !st.exactLo || !st.exact:
		return nil, false, nil
	}
	t, _ := ts.FindTypeByID(src)
	lo, err := iceberg.LiteralFromBytes(t, st.lower)
	if err != nil {
		return nil, false, fmt.Errorf("partition field %s: lower bound: %w", pf.Name, err)
	}
	hi, err := iceberg.LiteralFromBytes(t, st.upper)
	if err != nil {
		return nil, false, fmt.Errorf("partition field %s: upper bound: %w", pf.Name, err)
	}
	a := pf.Transform.Apply(iceberg.Optional[iceberg.Literal]{Val: lo, Valid: true})
	z := pf.Transform.Apply(iceberg.Optional[iceberg.Literal]{Val: hi, Valid: true})
	switch {
	case !a.Valid || !z.Valid:
		return nil, false, fmt.Errorf("partition field %s: %s cannot transform column %s", pf.Name, pf.Transform, name)
	case !pf.Transform.PreservesOrder() && !lo.Equals(hi):
		return nil, false, nil // a bucket of several values: the path says which
	case !a.Val.Equals(z.Val):
		return nil, false, fmt.Errorf("partition field %s: column %s goes from %s to %s: the file spans more than one partition", pf.Name, name, lo, hi)
	}
	return a.Val.Any(), true, nil
}
