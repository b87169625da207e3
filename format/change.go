package format

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/rowgroup"
	"github.com/pqsink/pqsink/schema"
)

// Upsert tables read each record as a change to the row of its key: a
// value is the key's new row, a tombstone (a null value) deletes it, and
// a change event (a Debezium envelope) says which. A format that can read
// its records so implements Keyer; the sink asks it, with the table's key
// fields, for a Keyed format, whose decoders give each record's key.

// EnvelopeDebezium is the KeyOptions.Envelope of Debezium change events:
// {"before": ..., "after": ..., "op": ..., "source": {"ts_ms": ...}}.
const EnvelopeDebezium = "debezium"

// KeyOptions say how a Keyed format reads its records as changes.
type KeyOptions struct {
	// Fields are the table's key fields (table.key), in order: top-level,
	// required, primitive fields of the files' schema.
	Fields []string
	// Envelope is how a value carries a change: "" when the value is the
	// key's row, or EnvelopeDebezium.
	Envelope string
}

// Keyer is the optional interface of a Format whose records can be read
// as changes to the rows of an upsert table.
type Keyer interface {
	// Keyed returns the format reading its records as changes by opts. It
	// checks the key fields against the files' schema when the format
	// has one (a field missing, optional or not primitive is an error
	// naming it); a format whose records name their schema checks each
	// schema when a record brings it, and rejects its records (reason
	// key) when the key cannot be read from them. An envelope the format
	// does not read is an error.
	Keyed(opts KeyOptions) (Keyed, error)
}

// Keyed is a format that reads its records as changes. Its FixedSchema
// and the schemas its decoders learn carry the change columns (CDCField)
// with a Debezium envelope. Its NewDecoder returns a ChangeDecoder.
type Keyed interface {
	Format
	// NewChangeDecoder returns the format's side of one Kafka partition.
	NewChangeDecoder(p Partition) ChangeDecoder
}

// ChangeDecoder is a Decoder that reads each record as a change. Its
// Decode reads a value that must be a row (a delete is a rejection, reason
// change); the sink of an upsert table calls DecodeChange.
type ChangeDecoder interface {
	Decoder
	// DecodeChange reads the record at offset with Kafka key key and value
	// value (nil: a tombstone). A record whose key cannot be read is a
	// rejection with reason key, never a row without a key; a change
	// event that cannot be applied one with reason change. An error is,
	// as for Decode, a failure of what the format depends on.
	DecodeChange(ctx context.Context, key, value []byte, offset int64) (Change, *Rejection, error)
}

// Change is a record read as a change to its key's row.
type Change struct {
	// Key is the row key, in the canonical encoding of table/keyindex;
	// valid until the next call.
	Key []byte
	// Delete reports that the change deletes the key's row; Row is then
	// empty.
	Delete bool
	// Row is the key's new row, for a builder, when not Delete; a
	// Debezium row's Payload is valid until the next call.
	Row Decoded
	// Op is a change event's operation: 'c', 'r', 'u' or 'd'; 0 for a
	// record without an envelope.
	Op byte
}

// CDCField is the top-level column of a change event's metadata in the
// files of a Debezium envelope: _cdc.op, the event's operation ("c",
// "r", "u"), and _cdc.ts, the time of the change at its source
// (source.ts_ms, else the event's ts_ms; null without either).
const CDCField = "_cdc"

// CDCNode is the CDCField column, its timestamp in unit.
func CDCNode(unit schema.TimeUnit) *schema.Node {
	return schema.Group(CDCField, schema.Required, schema.Logical{},
		schema.Leaf("op", schema.Required, meta.TypeByteArray, schema.Logical{Kind: schema.String}),
		schema.Leaf("ts", schema.Optional, meta.TypeInt64, schema.Logical{Kind: schema.Timestamp, UTC: true, Unit: unit}))
}

// ChangeReader is the ChangeDecoder that formats build theirs from: their
// Decoder of rows, and how they read a key from a decoded row and from a
// Kafka key. With Debezium set, values are Debezium events in JSON (with
// or without the schema and payload wrapper of schemas.enable), whose
// before and after the format's Decoder reads as JSON rows.
type ChangeReader struct {
	Decoder
	// ValueKey appends the key of a decoded row; its error is a record
	// whose key cannot be read.
	ValueKey func(dst []byte, d Decoded) ([]byte, error)
	// KafkaKey appends the key read from a Kafka key. keyErr is a key
	// that cannot be read; err a failure of what the format depends on
	// (a Schema Registry), returned as Decode returns it.
	KafkaKey func(ctx context.Context, dst, key []byte, offset int64) (out []byte, keyErr, err error)
	// Debezium: values are Debezium events in JSON; Unit is the unit of
	// the CDC column's timestamp.
	Debezium bool
	Unit     schema.TimeUnit

	key     []byte
	payload []byte
}

// Decode reads a value that must be a row: a Debezium event's row, or the
// value. A delete is a rejection (reason change).
func (c *ChangeReader) Decode(ctx context.Context, value []byte, offset int64) (Decoded, *Rejection, error) {
	if !c.Debezium {
		return c.Decoder.Decode(ctx, value, offset)
	}
	return RowOf(c.DecodeChange(ctx, nil, value, offset))
}

// RowOf is the row of a change that must write one, as a ChangeDecoder's
// Decode returns it: a delete is a rejection (reason change).
func RowOf(ch Change, rej *Rejection, err error) (Decoded, *Rejection, error) {
	if rej != nil || err != nil {
		return Decoded{}, rej, err
	}
	if ch.Delete {
		return Decoded{}, &Rejection{Reason: RejectChange, Err: errors.New("a delete where a row is expected")}, nil
	}
	return ch.Row, nil, nil
}

// DecodeChange reads a record as a change: see ChangeDecoder.
func (c *ChangeReader) DecodeChange(ctx context.Context, key, value []byte, offset int64) (Change, *Rejection, error) {
	if value == nil {
		return c.deleteByKafkaKey(ctx, key, offset, 0)
	}
	if !c.Debezium {
		d, rej, err := c.Decoder.Decode(ctx, value, offset)
		if rej != nil || err != nil {
			return Change{}, rej, err
		}
		k, err := c.ValueKey(c.key[:0], d)
		if err != nil {
			return Change{}, &Rejection{Reason: RejectKey, Err: fmt.Errorf("row key: %w", err)}, nil
		}
		c.key = k
		return Change{Key: k, Row: d}, nil, nil
	}
	ev, err := ParseDebezium(value)
	if err != nil {
		reason := RejectChange
		var syntax *SyntaxError
		if errors.As(err, &syntax) {
			reason = RejectDecode
		}
		return Change{}, &Rejection{Reason: reason, Err: err}, nil
	}
	if ev.Op == 'd' {
		if ev.Before == nil {
			return c.DeleteChange(ctx, key, nil, offset)
		}
		return c.DeleteChange(ctx, key, &Decoded{Payload: ev.Before}, offset)
	}
	d, rej, err := c.Decoder.Decode(ctx, ev.After, offset)
	if rej != nil || err != nil {
		if rej != nil {
			rej = &Rejection{Reason: rej.Reason, Err: fmt.Errorf("debezium after: %w", rej.Err)}
		}
		return Change{}, rej, err
	}
	c.payload = AppendCDC(c.payload[:0], d.Payload, ev, c.Unit)
	if d.Text == nil {
		d.Text = d.Payload
	}
	d.Payload = c.payload
	return c.RowChange(d, ev.Op)
}

// EventRejection is the rejection (reason change) of a Debezium event of
// op, which a format read with its own schema, that is neither a c, r or
// u with after (hasAfter) nor a d; nil for those.
func EventRejection(op string, hasAfter bool) *Rejection {
	switch op {
	case "c", "r", "u":
		if !hasAfter {
			return &Rejection{Reason: RejectChange, Err: fmt.Errorf("debezium: an op %s event without after", op)}
		}
		return nil
	case "d":
		return nil
	case "t":
		return &Rejection{Reason: RejectChange, Err: ErrTruncate}
	}
	if len(op) > 16 {
		op = op[:16] + "..."
	}
	return &Rejection{Reason: RejectChange, Err: fmt.Errorf("debezium: unknown op %q, want c, r, u, d or t", op)}
}

// RowChange is the change that writes row d (after, with its change
// column) of a Debezium event of op c, r or u: its key read from d.
func (c *ChangeReader) RowChange(d Decoded, op byte) (Change, *Rejection, error) {
	k, err := c.ValueKey(c.key[:0], d)
	if err != nil {
		return Change{}, &Rejection{Reason: RejectKey, Err: fmt.Errorf("debezium after: row key: %w", err)}, nil
	}
	c.key = k
	return Change{Key: k, Row: d, Op: op}, nil, nil
}

// DeleteChange is the change of a Debezium d event: the key of before, a
// row ValueKey reads, deleted, or when before is nil (null) the key of
// the Kafka key.
func (c *ChangeReader) DeleteChange(ctx context.Context, key []byte, before *Decoded, offset int64) (Change, *Rejection, error) {
	if before == nil {
		return c.deleteByKafkaKey(ctx, key, offset, 'd')
	}
	k, err := c.ValueKey(c.key[:0], *before)
	if err != nil {
		return Change{}, &Rejection{Reason: RejectKey, Err: fmt.Errorf("debezium delete: the row key of before: %w", err)}, nil
	}
	c.key = k
	return Change{Key: k, Delete: true, Op: 'd'}, nil, nil
}

func (c *ChangeReader) deleteByKafkaKey(ctx context.Context, key []byte, offset int64, op byte) (Change, *Rejection, error) {
	k, keyErr, err := c.KafkaKey(ctx, c.key[:0], key, offset)
	if err != nil {
		return Change{}, nil, err
	}
	if keyErr != nil {
		what := "tombstone"
		if op == 'd' {
			what = "debezium delete without before"
		}
		return Change{}, &Rejection{Reason: RejectKey, Err: fmt.Errorf("%s: the row key of the Kafka key: %w", what, keyErr)}, nil
	}
	c.key = k
	return Change{Key: k, Delete: true, Op: op}, nil, nil
}

// AppendCDC appends to dst the JSON object row with the CDCField member
// of event ev added last, its timestamp in unit. row is a JSON object's
// text.
func AppendCDC(dst, row []byte, ev DebeziumEvent, unit schema.TimeUnit) []byte {
	end := len(row) - 1
	for end > 0 && row[end] != '}' {
		end--
	}
	dst = append(dst, row[:end]...)
	empty := true
	for _, c := range row[1:end] {
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			empty = false
			break
		}
	}
	if !empty {
		dst = append(dst, ',')
	}
	dst = append(dst, `"`+CDCField+`":{"op":"`...)
	dst = append(dst, ev.Op)
	dst = append(dst, `","ts":`...)
	if ev.HasTS {
		ts := ev.TSMillis
		switch unit {
		case schema.Micros:
			ts *= 1000
		case schema.Nanos:
			ts *= 1000000
		}
		dst = strconv.AppendInt(dst, ts, 10)
	} else {
		dst = append(dst, "null"...)
	}
	return append(dst, "}}"...)
}

// CheckKeyOptions refuses an envelope other than "" and the ones format
// name reads (envelopes), and key fields CheckKeyFields refuses.
func CheckKeyOptions(opts KeyOptions, name string, envelopes ...string) error {
	if opts.Envelope != "" && !slices.Contains(envelopes, opts.Envelope) {
		return fmt.Errorf("format.envelope %s: the %s format does not read it yet", opts.Envelope, name)
	}
	return CheckKeyFields(opts.Fields)
}

// NewJSONChanges returns the ChangeReader of a JSON format whose records
// have one schema, s (the files' schema, which carries the key fields'
// columns): keys are read from the rows' JSON text and from JSON Kafka
// keys, with the shredder's options. Key fields s cannot give keys of
// make every record a rejection (reason key) naming the field.
func NewJSONChanges(rows Decoder, s *schema.Schema, opts KeyOptions, unit schema.TimeUnit, jsonOpts ...rowgroup.JSONOption) *ChangeReader {
	var jk *JSONKey
	leaves, err := KeyLeaves(s, opts.Fields)
	if err == nil {
		jk, err = NewJSONKey(leaves, jsonOpts...)
	}
	c := &ChangeReader{Decoder: rows, Debezium: opts.Envelope == EnvelopeDebezium, Unit: unit}
	c.ValueKey = func(dst []byte, d Decoded) ([]byte, error) {
		if err != nil {
			return dst, err
		}
		return jk.Append(dst, JSONText(d))
	}
	c.KafkaKey = func(_ context.Context, dst, key []byte, _ int64) ([]byte, error, error) {
		if err != nil {
			return dst, err, nil
		}
		out, kerr := jk.AppendKafkaKey(dst, key)
		return out, kerr, nil
	}
	return c
}

// JSONText is the JSON text of a decoded JSON record: its Text, or its
// Payload.
func JSONText(d Decoded) []byte {
	if d.Text != nil {
		return d.Text
	}
	return d.Payload
}
