package rowgroup

import (
	"errors"
	"fmt"

	"github.com/pqsink/pqsink/schema"
)

// Payload fills the payload part of a row from one record's value bytes,
// without ending the row. JSONShredder (JSON into a declared schema),
// VariantShredder (JSON into a VARIANT column) and avrorow.Decoder (Avro
// binary) are Payloads.
type Payload interface {
	// Append adds the value's columns to the row being built. On error the
	// row group is left as if Append had not been called (the Builder
	// also guarantees this) and the error is a *RecordError.
	Append(value []byte) error
}

// filler is implemented by the payloads of this package. The Builder calls
// fill instead of Append: fill leaves undoing a failed value to the
// Builder, which does it once for the whole row. u has begun just before
// the call, at the row group's current state: a payload that must take
// back what it appended before trying again (the JSON shredder's fast
// path) rolls back to it rather than marking the columns a second time.
type filler interface {
	fill(value []byte, u *recordUndo) error
	// rowGroup is the row group the payload appends to.
	rowGroup() *RowGroup
	// fillsEnvelope reports that the payload fills a top-level
	// EnvelopeField group itself, from the record.
	fillsEnvelope() bool
}

// ErrEnvelope is wrapped by the errors of Builder.Append when the presence
// of an Envelope does not match the schema: given for a schema without
// the envelope group, or missing for one with it. It is a mistake of the
// caller, not of the record.
var ErrEnvelope = errors.New("rowgroup: envelope does not match the schema")

// Builder composes rows of one row group from a payload and an optional
// envelope: payload.Append(value), then the Envelope's columns, then
// RowGroup.EndRow. It is the one way from a record to a row, for the sink
// and for convert. A Builder is not safe for concurrent use.
type Builder struct {
	g       *RowGroup
	payload Payload
	in      filler          // payload, when it is one of this package's
	env     *envelopeWriter // nil when the schema has no envelope for the Builder
	undo    recordUndo

	errEnvelope error // the error of Append when env is nil and one is given
}

// NewBuilder returns a builder over g. payload fills the row's payload
// fields; when g's schema has a top-level EnvelopeField group that the
// payload does not fill itself, the builder fills it from the Envelope
// passed to Append, and that group must have the shape of EnvelopeNode
// (the group itself required or optional).
//
// Payloads of this package leave the envelope to the Builder, except a
// JSONShredder made with EnvelopeFromJSON, which fills a _kafka field from
// the JSON like any other. A Payload of another package must fill every
// top-level field except EnvelopeField; when it is a Filler, the Builder
// calls Fill and undoes a failed row itself.
func NewBuilder(g *RowGroup, payload Payload) (*Builder, error) {
	if payload == nil {
		return nil, errors.New("rowgroup: builder without a payload")
	}
	b := &Builder{g: g, payload: payload}
	in, ok := payload.(filler)
	if f, isFiller := payload.(Filler); !ok && isFiller {
		in, ok = outsideFiller{f}, true
	}
	if ok {
		if in.rowGroup() != g {
			return nil, errors.New("rowgroup: builder: the payload appends to another row group")
		}
		b.in = in
	}
	var top *schema.Node
	for _, f := range g.Schema().Fields() {
		if f.Name == EnvelopeField {
			top = f
		}
	}
	switch {
	case top == nil:
		b.errEnvelope = fmt.Errorf("%w: an envelope was given, but the schema has no top-level %s group", ErrEnvelope, EnvelopeField)
	case b.in != nil && b.in.fillsEnvelope():
		b.errEnvelope = fmt.Errorf("%w: an envelope was given, but the payload fills %s from the record (EnvelopeFromJSON)", ErrEnvelope, EnvelopeField)
	default:
		var err error
		if b.env, err = newEnvelopeWriter(g, top); err != nil {
			return nil, err
		}
	}
	b.undo.init(g)
	return b, nil
}

// RowGroup returns the row group the builder appends to.
func (b *Builder) RowGroup() *RowGroup { return b.g }

// HasEnvelope reports whether rows take an Envelope: whether the schema has
// an envelope group that the builder fills.
func (b *Builder) HasEnvelope() bool { return b.env != nil }

// Append builds one row: the payload from value, then the envelope when
// the builder has one, then the end of the row. env must be non-nil
// exactly when HasEnvelope.
//
// On any error the row group is exactly as before: the row is undone
// whole. The error says which part failed: the payload's is a *RecordError
// (the record's value does not fit; a sink dead-letters the record), the
// envelope's wraps ErrEnvelopeText (a header key or topic that is not
// UTF-8; the record's fault too) or ErrEnvelope (the caller gave an
// Envelope where the schema has none, or none where it has one).
func (b *Builder) Append(value []byte, env *Envelope) error {
	if (env != nil) != (b.env != nil) {
		return b.envelopeError(env != nil)
	}
	if env != nil {
		if err := b.env.check(env); err != nil {
			return err
		}
	}
	b.undo.begin(b.g)
	var err error
	if b.in != nil {
		err = b.in.fill(value, &b.undo)
	} else {
		err = b.payload.Append(value)
	}
	if err != nil {
		b.undo.rollback(b.g)
		return err
	}
	if env != nil {
		b.env.append(env)
	}
	b.g.EndRow()
	return nil
}

func (b *Builder) envelopeError(given bool) error {
	if given {
		return b.errEnvelope
	}
	return fmt.Errorf("%w: the schema has the envelope group %s, and no envelope was given", ErrEnvelope, EnvelopeField)
}
