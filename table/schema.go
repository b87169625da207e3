package table

import (
	"errors"
	"fmt"

	"github.com/apache/iceberg-go"

	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/schema"
)

// ErrIncompatible is wrapped by the error of a table whose schema does not
// accept the sink's records, and of a file whose columns the table does not
// hold.
var ErrIncompatible = errors.New("the table's schema does not accept the records")

// converter turns a Parquet schema into an Iceberg one, numbering the fields
// in the order it meets them.
type converter struct {
	formatVersion int
	last          int
}

func (c *converter) next() int {
	c.last++
	return c.last
}

// icebergSchema converts s into an Iceberg schema: groups become structs,
// LIST and MAP groups lists and maps, a VARIANT group a variant (format
// version 3), leaves the primitive their logical type names. Field ids are
// numbered from 1; a catalog creating the table may renumber them, which is
// why the ids the files carry come from the table (withFieldIDs), never from
// here.
func icebergSchema(s *schema.Schema, formatVersion int) (*iceberg.Schema, error) {
	c := &converter{formatVersion: formatVersion}
	fields, err := c.fields(s.Fields())
	if err != nil {
		return nil, err
	}
	return iceberg.NewSchema(0, fields...), nil
}

func (c *converter) fields(nodes []*schema.Node) ([]iceberg.NestedField, error) {
	out := make([]iceberg.NestedField, 0, len(nodes))
	for _, n := range nodes {
		f, err := c.field(n)
		if err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, nil
}

func (c *converter) field(n *schema.Node) (iceberg.NestedField, error) {
	if n.Repetition == schema.Repeated {
		return iceberg.NestedField{}, fmt.Errorf("field %s: a repeated field outside a LIST or MAP group has no Iceberg type", n.PathString())
	}
	id := c.next()
	t, err := c.typ(n)
	if err != nil {
		return iceberg.NestedField{}, err
	}
	return iceberg.NestedField{ID: id, Name: n.Name, Type: t, Required: n.Repetition == schema.Required}, nil
}

func (c *converter) typ(n *schema.Node) (iceberg.Type, error) {
	if n.IsLeaf() {
		t, err := leafType(n)
		if err != nil || c.formatVersion >= 3 {
			return t, err
		}
		switch t.(type) {
		case iceberg.TimestampNsType, iceberg.TimestampTzNsType:
			// Refused here, as VARIANT is, so that the table says it of
			// the records' schema (ErrIncompatible) rather than the
			// catalog of its metadata.
			return nil, fmt.Errorf("field %s: TIMESTAMP(NANOS) is Iceberg's %s, which needs table.format_version 3 "+
				"(table.timestamp_precision: micros writes Protobuf Timestamps, Avro timestamp-nanos and a schema file's TIMESTAMP(NANOS) in microseconds, a version 2 type)", n.PathString(), t)
		}
		return t, nil
	}
	switch n.Logical.Kind {
	case schema.None:
		fields, err := c.fields(n.Fields)
		if err != nil {
			return nil, err
		}
		return &iceberg.StructType{FieldList: fields}, nil
	case schema.List:
		el := n.ListElement()
		if el == nil || el.Repetition == schema.Repeated {
			return nil, fmt.Errorf("field %s: only the standard three-level LIST shape maps to an Iceberg list", n.PathString())
		}
		id := c.next()
		t, err := c.typ(el)
		if err != nil {
			return nil, err
		}
		return &iceberg.ListType{ElementID: id, Element: t, ElementRequired: el.Repetition == schema.Required}, nil
	case schema.Map:
		k, v := n.MapKeyValue()
		if k == nil || v == nil {
			return nil, fmt.Errorf("field %s: a MAP without values has no Iceberg type", n.PathString())
		}
		kid, vid := c.next(), c.next()
		kt, err := c.typ(k)
		if err != nil {
			return nil, err
		}
		vt, err := c.typ(v)
		if err != nil {
			return nil, err
		}
		return &iceberg.MapType{KeyID: kid, KeyType: kt, ValueID: vid, ValueType: vt, ValueRequired: v.Repetition == schema.Required}, nil
	case schema.Variant:
		if c.formatVersion < 3 {
			return nil, fmt.Errorf("field %s: a VARIANT column needs table.format_version 3", n.PathString())
		}
		return iceberg.VariantType{}, nil
	}
	return nil, fmt.Errorf("field %s: a %s group has no Iceberg type", n.PathString(), n.Logical.Kind)
}

// leafType is the Iceberg type of a Parquet leaf. TIMESTAMP(MILLIS) maps to
// Iceberg's microsecond timestamp: readers widen the values, and the bounds
// this package writes are converted (see bound).
func leafType(n *schema.Node) (iceberg.Type, error) {
	l := n.Logical
	unsupported := func() (iceberg.Type, error) {
		what := l.String()
		if what == "" {
			what = n.Physical.String()
		} else {
			what += " on " + n.Physical.String()
		}
		return nil, fmt.Errorf("field %s: %s has no Iceberg type", n.PathString(), what)
	}
	switch n.Physical {
	case meta.TypeBoolean:
		if l.Kind == schema.None {
			return iceberg.PrimitiveTypes.Bool, nil
		}
	case meta.TypeInt32:
		switch {
		case l.Kind == schema.None, l.Kind == schema.Int && (l.Signed || l.BitWidth < 32):
			return iceberg.PrimitiveTypes.Int32, nil
		case l.Kind == schema.Date:
			return iceberg.PrimitiveTypes.Date, nil
		case l.Kind == schema.Decimal:
			return iceberg.DecimalTypeOf(int(l.Precision), int(l.Scale)), nil
		}
	case meta.TypeInt64:
		switch {
		case l.Kind == schema.None, l.Kind == schema.Int && l.Signed:
			return iceberg.PrimitiveTypes.Int64, nil
		case l.Kind == schema.Decimal:
			return iceberg.DecimalTypeOf(int(l.Precision), int(l.Scale)), nil
		case l.Kind == schema.Time && l.Unit == schema.Micros:
			return iceberg.PrimitiveTypes.Time, nil
		case l.Kind == schema.Timestamp && l.Unit != schema.Nanos:
			if l.UTC {
				return iceberg.PrimitiveTypes.TimestampTz, nil
			}
			return iceberg.PrimitiveTypes.Timestamp, nil
		case l.Kind == schema.Timestamp:
			if l.UTC {
				return iceberg.PrimitiveTypes.TimestampTzNs, nil
			}
			return iceberg.PrimitiveTypes.TimestampNs, nil
		}
	case meta.TypeFloat:
		if l.Kind == schema.None {
			return iceberg.PrimitiveTypes.Float32, nil
		}
	case meta.TypeDouble:
		if l.Kind == schema.None {
			return iceberg.PrimitiveTypes.Float64, nil
		}
	case meta.TypeByteArray:
		switch l.Kind {
		case schema.String, schema.Enum, schema.JSON:
			return iceberg.PrimitiveTypes.String, nil
		case schema.None, schema.BSON:
			return iceberg.PrimitiveTypes.Binary, nil
		}
	case meta.TypeFixedLenByteArray:
		switch l.Kind {
		case schema.None:
			return iceberg.FixedTypeOf(int(n.Length)), nil
		case schema.UUID:
			return iceberg.PrimitiveTypes.UUID, nil
		case schema.Decimal:
			return iceberg.DecimalTypeOf(int(l.Precision), int(l.Scale)), nil
		}
	}
	return unsupported()
}

// withFieldIDs returns s with the field id of every field taken from the
// table's schema ts, matched by name: the schema the sink must write its
// files with, so that each Parquet field_id is the table's. It fails, naming
// the first field in s's order, when ts does not accept s: a field of s the
// table lacks, a type the table's does not equal or widen (int to long,
// float to double, a decimal of more digits and the same scale), an
// optional field of s the table requires, or a required field of the
// table that s lacks.
func withFieldIDs(s *schema.Schema, ts *iceberg.Schema, formatVersion int) (*schema.Schema, error) {
	c := &converter{formatVersion: formatVersion}
	fields, err := c.matchFields(s.Fields(), ts.Fields(), "")
	if err != nil {
		return nil, err
	}
	return schema.New(s.Name(), fields...)
}

func (c *converter) matchFields(nodes []*schema.Node, table []iceberg.NestedField, parent string) ([]*schema.Node, error) {
	out := make([]*schema.Node, 0, len(nodes))
	seen := map[string]bool{}
	for _, n := range nodes {
		var tf *iceberg.NestedField
		for i := range table {
			if table[i].Name == n.Name {
				tf = &table[i]
			}
		}
		if tf == nil {
			return nil, fmt.Errorf("%w: field %s is not in the table", ErrIncompatible, n.PathString())
		}
		seen[n.Name] = true
		if n.Repetition == schema.Optional && tf.Required {
			return nil, fmt.Errorf("%w: field %s is optional, the table requires it", ErrIncompatible, n.PathString())
		}
		m, err := c.match(n, tf.Type)
		if err != nil {
			return nil, err
		}
		out = append(out, m.WithFieldID(int32(tf.ID)))
	}
	for _, tf := range table {
		if !seen[tf.Name] && tf.Required {
			return nil, fmt.Errorf("%w: field %s%s is required by the table, the records lack it", ErrIncompatible, parent, tf.Name)
		}
	}
	return out, nil
}

// match copies n with the ids of the table type t below it; n's own id is
// set by the caller.
func (c *converter) match(n *schema.Node, t iceberg.Type) (*schema.Node, error) {
	mismatch := func(ours iceberg.Type) error {
		return fmt.Errorf("%w: field %s is %s in the table, the records need %s", ErrIncompatible, n.PathString(), t, ours)
	}
	cp := *n
	cp.FieldID, cp.HasFieldID = 0, false
	if n.IsLeaf() {
		ours, err := leafType(n)
		if err != nil {
			return nil, err
		}
		if !accepts(t, ours) {
			return nil, mismatch(ours)
		}
		return &cp, nil
	}
	switch n.Logical.Kind {
	case schema.None:
		st, ok := t.(*iceberg.StructType)
		if !ok {
			return nil, mismatch(&iceberg.StructType{})
		}
		fields, err := c.matchFields(n.Fields, st.FieldList, n.PathString()+".")
		if err != nil {
			return nil, err
		}
		cp.Fields = fields
		return &cp, nil
	case schema.List:
		lt, ok := t.(*iceberg.ListType)
		el := n.ListElement()
		if !ok || el == nil || el == n.Fields[0] {
			ours, err := c.typ(n)
			if err != nil {
				return nil, err
			}
			return nil, mismatch(ours)
		}
		if el.Repetition == schema.Optional && lt.ElementRequired {
			return nil, fmt.Errorf("%w: field %s is optional, the table requires it", ErrIncompatible, el.PathString())
		}
		m, err := c.match(el, lt.Element)
		if err != nil {
			return nil, err
		}
		rep := *n.Fields[0]
		rep.Fields = []*schema.Node{m.WithFieldID(int32(lt.ElementID))}
		cp.Fields = []*schema.Node{&rep}
		return &cp, nil
	case schema.Map:
		mt, ok := t.(*iceberg.MapType)
		k, v := n.MapKeyValue()
		if !ok || k == nil || v == nil {
			ours, err := c.typ(n)
			if err != nil {
				return nil, err
			}
			return nil, mismatch(ours)
		}
		if v.Repetition == schema.Optional && mt.ValueRequired {
			return nil, fmt.Errorf("%w: field %s is optional, the table requires it", ErrIncompatible, v.PathString())
		}
		mk, err := c.match(k, mt.KeyType)
		if err != nil {
			return nil, err
		}
		mv, err := c.match(v, mt.ValueType)
		if err != nil {
			return nil, err
		}
		kv := *n.Fields[0]
		kv.Fields = []*schema.Node{mk.WithFieldID(int32(mt.KeyID)), mv.WithFieldID(int32(mt.ValueID))}
		cp.Fields = []*schema.Node{&kv}
		return &cp, nil
	case schema.Variant:
		if _, ok := t.(iceberg.VariantType); !ok {
			return nil, mismatch(iceberg.VariantType{})
		}
		// The columns of a VARIANT (metadata, value, typed_value) carry no
		// Iceberg ids.
		return &cp, nil
	}
	ours, err := c.typ(n)
	if err != nil {
		return nil, err
	}
	return nil, mismatch(ours)
}

// accepts reports whether a table column of type table can hold values of
// type ours: the same type, or one Iceberg's type promotion widens it to.
func accepts(table, ours iceberg.Type) bool {
	if table.Equals(ours) {
		return true
	}
	switch o := ours.(type) {
	case iceberg.Int32Type:
		_, ok := table.(iceberg.Int64Type)
		return ok
	case iceberg.Float32Type:
		_, ok := table.(iceberg.Float64Type)
		return ok
	case iceberg.DecimalType:
		t, ok := table.(iceberg.DecimalType)
		return ok && t.Scale() == o.Scale() && t.Precision() >= o.Precision()
	}
	return false
}
