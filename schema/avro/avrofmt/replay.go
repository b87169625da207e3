package avrofmt

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"sync"

	"github.com/pqsink/pqsink/config"
	"github.com/pqsink/pqsink/format"
	"github.com/pqsink/pqsink/internal/schemaregistry"
	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/reader"
	"github.com/pqsink/pqsink/schema"
	"github.com/pqsink/pqsink/schema/avro"
)

// Replay is the format's replay side (format.ReplayDriver): the records
// of a file whose footer holds an Avro schema (avro.MetadataKey) are
// written in Avro binary again, in Confluent's wire format, with the
// schema registered under the replay's subject in the target's registry.
func Replay(_ *config.Config, env format.ReplayEnv) format.Replayer {
	return &replayer{env: env, encoders: map[string]*encoder{}}
}

// replayer is the format's replay side for one replay.
type replayer struct {
	env format.ReplayEnv
	// mu guards encoders: workers share them, and one registers each
	// schema.
	mu       sync.Mutex
	encoders map[string]*encoder
}

func (r *replayer) Label() string { return "Avro" }

func (r *replayer) Claims(kv []meta.KeyValue) string {
	if schemaText(kv) == "" {
		return ""
	}
	return avro.MetadataKey
}

// schemaText is the footer's Avro schema, "" when it has none.
func schemaText(kv []meta.KeyValue) string {
	var text string
	for _, e := range kv {
		if e.Key == avro.MetadataKey && e.Value != nil {
			text = *e.Value
		}
	}
	return text
}

// encoder encodes the records of files that came from Avro: the schema of
// the footer's avro.schema, registered under the target's subject.
type encoder struct {
	schema *avro.Schema
	id     uint32
}

// Encoder returns the encoder of a file's avro.schema text, registering
// the schema once per replay.
func (r *replayer) Encoder(ctx context.Context, f format.ReplayFile) (format.RecordEncoder, error) {
	text := schemaText(f.KV)
	r.mu.Lock()
	defer r.mu.Unlock()
	if v, ok := r.encoders[text]; ok {
		return v, nil
	}
	s, err := avro.Parse(text)
	if err != nil {
		return nil, fmt.Errorf("footer %s: %w", avro.MetadataKey, err)
	}
	if r.env.Registry == nil {
		return nil, fmt.Errorf("the file came from Avro: set format.registry.url in the config to register its schema for the Confluent wire format")
	}
	id, err := r.env.Registry.Register(ctx, r.env.Subject, s.String())
	if err != nil {
		return nil, fmt.Errorf("registering the Avro schema under subject %s: %w", r.env.Subject, err)
	}
	r.env.Log.Info("avro schema registered", "subject", r.env.Subject, "id", id)
	v := &encoder{schema: s, id: id}
	r.encoders[text] = v
	return v, nil
}

// AppendRecord appends the record rec (a top-level row) in the Confluent
// wire format.
func (a *encoder) AppendRecord(dst []byte, rec reader.Value) ([]byte, error) {
	dst = schemaregistry.AppendWire(dst, a.id)
	root := a.schema.Root
	if root.Kind != avro.Record {
		v, _ := rec.Field(avro.ValueField)
		return appendAvro(dst, root, v, avro.ValueField)
	}
	return appendAvro(dst, root, rec, "")
}

// Columns binds the encoder to the payload of row group g of f
// (format.ColumnEncoder).
func (a *encoder) Columns(f *reader.File, g int, extra []int) (format.ColumnRecords, []*reader.ColumnCursor, error) {
	c, cur, err := newAvroColumns(f, g, a, extra)
	if err != nil {
		return nil, nil, err
	}
	return c, cur, nil
}

// appendAvro appends v, a value of the Parquet column that Avro type t
// maps to (schema/avro's Parquet mapping), in Avro binary.
func appendAvro(dst []byte, t *avro.Type, v reader.Value, path string) ([]byte, error) {
	mismatch := func() ([]byte, error) {
		return dst, fmt.Errorf("avro field %s: a %s value for Avro type %s", fieldPath(path), v.Kind(), t.Kind)
	}
	if t.Kind == avro.Union {
		return appendUnion(dst, t, v, path)
	}
	if v.IsNull() && t.Kind != avro.Null {
		return dst, fmt.Errorf("avro field %s: null for the non-nullable Avro type %s", fieldPath(path), t.Kind)
	}
	switch t.Kind {
	case avro.Null:
		return dst, nil
	case avro.Boolean:
		if v.Kind() != reader.KindBool {
			return mismatch()
		}
		if v.Bool() {
			return append(dst, 1), nil
		}
		return append(dst, 0), nil
	case avro.Int:
		if v.Kind() == reader.KindInt64 && avro.TimeMillisInMicros(t, v.Node()) {
			ms, err := timeMillisBack(v.Int64(), path)
			return avro.AppendLong(dst, ms), err
		}
		if v.Kind() != reader.KindInt32 {
			return mismatch()
		}
		return avro.AppendLong(dst, int64(v.Int32())), nil
	case avro.Long:
		if v.Kind() != reader.KindInt64 {
			return mismatch()
		}
		return avro.AppendLong(dst, schema.NanosBack(v.Int64()/millisDivisor(t, v.Node()), nanosMultiplier(t, v.Node()))), nil
	case avro.Float:
		if v.Kind() != reader.KindFloat {
			return mismatch()
		}
		return binary.LittleEndian.AppendUint32(dst, math.Float32bits(v.Float())), nil
	case avro.Double:
		if v.Kind() != reader.KindDouble {
			return mismatch()
		}
		return binary.LittleEndian.AppendUint64(dst, math.Float64bits(v.Double())), nil
	case avro.Bytes:
		if v.Kind() != reader.KindBytes {
			return mismatch()
		}
		b := v.Bytes()
		return append(avro.AppendLong(dst, int64(len(b))), b...), nil
	case avro.String:
		if v.Kind() != reader.KindBytes {
			return mismatch()
		}
		b := v.Bytes()
		if t.Logical == avro.UUID && len(b) == 16 {
			// Parquet holds the 16 bytes; Avro's uuid on string is its text.
			dst = avro.AppendLong(dst, 36)
			for i, part := range [...][2]int{{0, 4}, {4, 6}, {6, 8}, {8, 10}, {10, 16}} {
				if i > 0 {
					dst = append(dst, '-')
				}
				dst = hex.AppendEncode(dst, b[part[0]:part[1]])
			}
			return dst, nil
		}
		return append(avro.AppendLong(dst, int64(len(b))), b...), nil
	case avro.Enum:
		if v.Kind() != reader.KindBytes {
			return mismatch()
		}
		sym := string(v.Bytes())
		for i, s := range t.Symbols {
			if s == sym {
				return avro.AppendLong(dst, int64(i)), nil
			}
		}
		return dst, fmt.Errorf("avro field %s: %q is not a symbol of enum %s", fieldPath(path), sym, t.Name)
	case avro.Fixed:
		if v.Kind() != reader.KindBytes || len(v.Bytes()) != t.Size {
			return dst, fmt.Errorf("avro field %s: want %d bytes for fixed %s", fieldPath(path), t.Size, t.Name)
		}
		return append(dst, v.Bytes()...), nil
	case avro.Record:
		if v.Kind() != reader.KindGroup {
			return mismatch()
		}
		var err error
		for _, f := range t.Fields {
			fv, _ := v.Field(f.Name)
			if dst, err = appendAvro(dst, f.Type, fv, joinPath(path, f.Name)); err != nil {
				return dst, err
			}
		}
		return dst, nil
	case avro.Array:
		if v.Kind() != reader.KindList {
			return mismatch()
		}
		items := v.List()
		if len(items) > 0 {
			dst = avro.AppendLong(dst, int64(len(items)))
			var err error
			for _, e := range items {
				if dst, err = appendAvro(dst, t.Items, e, path+"[]"); err != nil {
					return dst, err
				}
			}
		}
		return append(dst, 0), nil
	case avro.Map:
		if v.Kind() != reader.KindMap {
			return mismatch()
		}
		if n := v.Len(); n > 0 {
			dst = avro.AppendLong(dst, int64(n))
			var err error
			for k, e := range v.Entries() {
				kb := k.Bytes()
				dst = append(avro.AppendLong(dst, int64(len(kb))), kb...)
				if dst, err = appendAvro(dst, t.Values, e, path+"{}"); err != nil {
					return dst, err
				}
			}
		}
		return append(dst, 0), nil
	}
	return mismatch()
}

// appendUnion appends a union value: the branch index, then the value. A
// union of null and one type is that type's optional column; any other is
// a group of member0, member1, … of which one is set.
func appendUnion(dst []byte, t *avro.Type, v reader.Value, path string) ([]byte, error) {
	nullIndex := -1
	var members []int
	for i, b := range t.Branches {
		if b.Kind == avro.Null {
			nullIndex = i
		} else {
			members = append(members, i)
		}
	}
	if v.IsNull() {
		if nullIndex < 0 {
			return dst, fmt.Errorf("avro field %s: null for a union without null", fieldPath(path))
		}
		return avro.AppendLong(dst, int64(nullIndex)), nil
	}
	if len(members) == 1 {
		dst = avro.AppendLong(dst, int64(members[0]))
		return appendAvro(dst, t.Branches[members[0]], v, path)
	}
	if v.Kind() != reader.KindGroup {
		return dst, fmt.Errorf("avro field %s: a %s value for a union of %d types", fieldPath(path), v.Kind(), len(members))
	}
	for m, bi := range members {
		mv, ok := v.Field(fmt.Sprintf("member%d", m))
		if ok && !mv.IsNull() {
			dst = avro.AppendLong(dst, int64(bi))
			return appendAvro(dst, t.Branches[bi], mv, path)
		}
	}
	if nullIndex >= 0 {
		return avro.AppendLong(dst, int64(nullIndex)), nil
	}
	return dst, fmt.Errorf("avro field %s: no member of the union is set", fieldPath(path))
}

func joinPath(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

func fieldPath(path string) string {
	if path == "" {
		return "(root)"
	}
	return path
}

// millisDivisor is what a column's values are divided by to give the
// Avro long of type t: 1000 for a millisecond timestamp that a table's
// file holds in microseconds (schema.WidenMillis), whose values the sink
// multiplied by 1000, and 1 otherwise.
func millisDivisor(t *avro.Type, n *schema.Node) int64 {
	if avro.MillisInMicros(t, n) {
		return 1000
	}
	return 1
}
