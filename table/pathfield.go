package table

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	itable "github.com/apache/iceberg-go/table"

	"github.com/pqsink/pqsink/archive"
	"github.com/pqsink/pqsink/schema"
)

// PathField is one field of a table's partition spec as the sink puts it
// in a file's path: a folder Name=value, where value is the field's
// partition value in Iceberg's human-readable form (see Value), escaped
// as archive.Escape does, or archive.HiveNull for the null partition.
// Commit reads the partition tuple back from these folders, so that a
// file's tuple is the one its path says.
type PathField struct {
	// Name is the partition field's name in the spec, e.g. id_bucket.
	Name string
	// Transform is the field's transform as partition_by writes it:
	// identity, bucket[16], day.
	Transform string
	// Column is the source column's dotted path, e.g. _kafka.timestamp.
	Column string
	// Leaf is the source column in the handle's Schema; nil for a column
	// of the _kafka envelope and when the handle has no schema yet.
	Leaf *schema.Node

	tr transform
}

// emptyString is the path value of an empty string, nothing (the folder
// name=), as Iceberg's own writers name it: AppendEscaped would write
// HiveNull, the null partition, and Iceberg's partition value of an empty
// string is not null. AppendEscaped never writes nothing, so no value
// collides with it.
const emptyString = ""

// legacyEmptyString is the path value of an empty string in earlier
// versions of pqsink: not valid percent-encoding, so that readers which decode a file's location
// as a URL (iceberg-go) refuse it. Still read, for the files of older
// sinks that a compaction rewrites in their folder.
const legacyEmptyString = "%EMPTY"

// PathFields returns the table's partition spec as the sink puts it in
// its files' paths, one PathField per spec field, in the spec's order.
func (h *Handle) PathFields(ctx context.Context) ([]PathField, error) {
	s, err := h.PathSpec(ctx, DefaultSpec)
	return s.Fields, err
}

// DefaultSpec asks PathSpec for the table's default partition spec.
const DefaultSpec = -1

// PathSpec is one of a table's partition specs as the sink puts it in its
// files' paths.
type PathSpec struct {
	// ID is the spec's id in the table's metadata, which a data file
	// written by it carries (File.SpecID).
	ID int
	// Fields are the spec's fields, in its order.
	Fields []PathField
}

// PathSpec returns the table's partition spec of id, or its default spec
// when id is DefaultSpec, as the sink puts it in its files' paths. A table
// not created yet (the first Avro schema creates it) has the configured
// spec, its first, with id 0.
func (h *Handle) PathSpec(ctx context.Context, id int) (PathSpec, error) {
	tbl, err := h.cat.LoadTable(ctx, h.ident)
	switch {
	case errors.Is(err, catalog.ErrNoSuchTable) && h.schema == nil && id <= 0:
		// The configured spec, whose source columns the path cannot take
		// from the records (the files' schema is not known yet).
		var out []PathField
		for _, p := range h.k.cfg.PartitionBy {
			out = append(out, PathField{Name: partitionName(p), Transform: transformText(p), Column: p.Column})
		}
		return PathSpec{Fields: out}, nil
	case err != nil:
		return PathSpec{}, fmt.Errorf("table %s: %w", h.name, err)
	}
	spec, err := specOf(tbl, id)
	if err != nil {
		return PathSpec{}, fmt.Errorf("table %s: %w", h.name, err)
	}
	fields, err := pathFields(tbl, spec, h.schema)
	if err != nil {
		return PathSpec{}, err
	}
	return PathSpec{ID: spec.ID(), Fields: fields}, nil
}

// SpecIDs returns the ids of the table's partition specs, the default one
// first: a file may be committed with any of them. A table not created
// yet has its first, 0.
func (h *Handle) SpecIDs(ctx context.Context) ([]int, error) {
	tbl, err := h.cat.LoadTable(ctx, h.ident)
	switch {
	case errors.Is(err, catalog.ErrNoSuchTable) && h.schema == nil:
		return []int{0}, nil
	case err != nil:
		return nil, fmt.Errorf("table %s: %w", h.name, err)
	}
	md := tbl.Metadata()
	ids := []int{md.DefaultPartitionSpec()}
	for _, s := range md.PartitionSpecs() {
		if s.ID() != ids[0] {
			ids = append(ids, s.ID())
		}
	}
	return ids, nil
}

// specOf is tbl's partition spec of id, or its default spec for
// DefaultSpec.
func specOf(tbl *itable.Table, id int) (iceberg.PartitionSpec, error) {
	if id == DefaultSpec {
		return tbl.Spec(), nil
	}
	s := tbl.Metadata().PartitionSpecByID(id)
	if s == nil {
		return iceberg.PartitionSpec{}, fmt.Errorf("partition spec %d is not one of the table's", id)
	}
	return *s, nil
}

func pathFields(tbl *itable.Table, spec iceberg.PartitionSpec, s *schema.Schema) ([]PathField, error) {
	ts := tbl.Schema()
	var out []PathField
	for _, pf := range spec.Fields() {
		col, ok := ts.FindColumnName(pf.SourceID())
		src, _ := ts.FindTypeByID(pf.SourceID())
		if !ok || src == nil {
			return nil, fmt.Errorf("partition field %s: no source column %d in the table's schema", pf.Name, pf.SourceID())
		}
		tr, err := newTransform(pf.Transform, src)
		if err != nil {
			return nil, fmt.Errorf("partition field %s (%s of %s): %w", pf.Name, pf.Transform, col, err)
		}
		f := PathField{Name: pf.Name, Transform: pf.Transform.String(), Column: col, tr: tr}
		if s != nil && !strings.HasPrefix(col, "_kafka.") {
			f.Leaf = s.Lookup(strings.Split(col, ".")...)
			if f.Leaf == nil || !f.Leaf.IsLeaf() || f.Leaf.MaxRep > 0 {
				return nil, fmt.Errorf("partition field %s: source column %s is not a column of the files outside lists and maps", pf.Name, col)
			}
		}
		out = append(out, f)
	}
	return out, nil
}

// AppendValue appends the path value of a record whose source column
// holds plain, a value in Parquet's PLAIN encoding of Leaf's physical type
// (a BYTE_ARRAY without its length), as the sink's JSON shredder writes
// it; nil is null. The value is the field's transform of it, computed as
// Iceberg's specification defines the transform, in the human-readable
// form that Iceberg's writers put in paths, escaped for a path segment.
func (f *PathField) AppendValue(dst, plain []byte) ([]byte, error) {
	if plain == nil {
		return append(dst, archive.HiveNull...), nil
	}
	if f.Leaf == nil {
		return nil, fmt.Errorf("partition field %s: no source column in the files' schema", f.Name)
	}
	v, ok := bound(f.Leaf, f.tr.src, plain, true)
	if !ok {
		return nil, fmt.Errorf("partition field %s: column %s: %w", f.Name, f.Column, errBadValue)
	}
	text, err := f.tr.apply(v)
	if err != nil {
		return nil, fmt.Errorf("partition field %s: column %s: %w", f.Name, f.Column, err)
	}
	if text == "" {
		return append(dst, emptyString...), nil
	}
	return archive.AppendEscaped(dst, text), nil
}

// pathValues reads the partition values that loc, a data file's location
// under the table's location, holds in its folders: for each field of
// spec whose folder Name=value is there, the value as the partition tuple
// holds it (nil for the null partition). A file elsewhere has none.
func pathValues(tbl *itable.Table, spec iceberg.PartitionSpec, loc string) (map[int]any, map[int]bool, error) {
	segs, ok := pathFolders(tbl, loc)
	if !ok {
		return nil, nil, nil
	}
	fields, err := pathFields(tbl, spec, nil)
	if err != nil {
		return nil, nil, err
	}
	var ids []int
	for _, pf := range spec.Fields() {
		ids = append(ids, pf.FieldID)
	}
	vals, found := map[int]any{}, map[int]bool{}
	for i, f := range fields {
		for _, seg := range segs {
			text, ok := strings.CutPrefix(seg, f.Name+"=")
			if !ok {
				continue
			}
			id := ids[i]
			found[id] = true
			if text == emptyString || text == legacyEmptyString {
				text = ""
			} else {
				var null bool
				if text, null, err = archive.Unescape(text); err != nil {
					return nil, nil, fmt.Errorf("partition field %s: %w", f.Name, err)
				} else if null {
					vals[id] = nil
					break
				}
			}
			v, err := f.tr.parsePathValue(text)
			if err != nil {
				return nil, nil, fmt.Errorf("partition field %s: the path's value: %w", f.Name, err)
			}
			vals[id] = v
			break
		}
	}
	return vals, found, nil
}

// pathFolders returns the folders of loc, a data file's location, under
// the table's data/ folder; ok is false for a file elsewhere.
func pathFolders(tbl *itable.Table, loc string) (folders []string, ok bool) {
	rest, ok := strings.CutPrefix(loc, strings.TrimSuffix(tbl.Location(), "/")+"/data/")
	if !ok {
		return nil, false
	}
	segs := strings.Split(rest, "/")
	return segs[:len(segs)-1], true // without the file's name
}

// samePartitionValue compares two values of a partition tuple, of the
// same Go types when they are equal (int32, iceberg.Date, string, []byte,
// iceberg.Decimal...).
func samePartitionValue(a, b any) bool { return reflect.DeepEqual(a, b) }

// Location is the table's location as its metadata says: a REST catalog,
// or another engine that created an adopted table, may have put it
// elsewhere than Catalog.Location. A table not created yet (one that the
// first Avro schema creates) is where the sink will create it.
func (h *Handle) Location(ctx context.Context) (string, error) {
	tbl, err := h.cat.LoadTable(ctx, h.ident)
	switch {
	case errors.Is(err, catalog.ErrNoSuchTable) && h.schema == nil:
		return h.k.Location(h.ident[len(h.ident)-1]), nil
	case err != nil:
		return "", fmt.Errorf("table %s: %w", h.name, err)
	}
	return tbl.Location(), nil
}
