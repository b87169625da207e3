package rowgroup

import (
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/schema"
)

// Header is one Kafka record header.
type Header struct {
	Key   string
	Value []byte // nil = null value
}

// Envelope is the Kafka metadata of one record, appended beside the
// payload as the EnvelopeField group.
type Envelope struct {
	Topic     string
	Partition int32
	Offset    int64
	Timestamp time.Time // stored as TIMESTAMP(MILLIS, UTC): sub-millisecond digits are dropped
	Key       []byte    // nil = null key; empty and non-nil = the empty key
	Headers   []Header  // in record order, duplicates kept; nil and empty are the same
}

// EnvelopeField is the name of the top-level envelope group.
const EnvelopeField = "_kafka"

// EnvelopeNode returns the envelope group, to be added beside the payload
// fields of a schema:
//
//	required group _kafka {
//	  required binary topic (STRING);
//	  required int32 partition;
//	  required int64 offset;
//	  required int64 timestamp (TIMESTAMP(MILLIS,true));
//	  optional binary key;
//	  required group headers (MAP) {
//	    repeated group key_value {
//	      required binary key (STRING);
//	      optional binary value;
//	    }
//	  }
//	}
//
// Every record has a topic, partition, offset and timestamp, so those are
// required. The key is null for a record without one and the empty binary
// for an empty one. headers is a required map: a record without headers
// has the empty map, which is what Kafka means by no headers (it does not
// tell an absent header list from an empty one). Entries keep the record's
// order and its duplicate keys, so replay restores the headers exactly;
// readers that resolve a map by key see the last of duplicates.
func EnvelopeNode() *schema.Node { return EnvelopeNodeIn(schema.Millis) }

// EnvelopeNodeIn is EnvelopeNode with the timestamp in unit, Millis (as
// Kafka keeps it) or Micros (the unit of Iceberg's timestamptz, for the
// files of a table).
func EnvelopeNodeIn(unit schema.TimeUnit) *schema.Node {
	str := schema.Logical{Kind: schema.String}
	return schema.Group(EnvelopeField, schema.Required, schema.Logical{},
		schema.Leaf("topic", schema.Required, meta.TypeByteArray, str),
		schema.Leaf("partition", schema.Required, meta.TypeInt32, schema.Logical{}),
		schema.Leaf("offset", schema.Required, meta.TypeInt64, schema.Logical{}),
		schema.Leaf("timestamp", schema.Required, meta.TypeInt64, schema.Logical{Kind: schema.Timestamp, UTC: true, Unit: unit}),
		schema.Leaf("key", schema.Optional, meta.TypeByteArray, schema.Logical{}),
		schema.Group("headers", schema.Required, schema.Logical{Kind: schema.Map},
			schema.Group("key_value", schema.Repeated, schema.Logical{},
				schema.Leaf("key", schema.Required, meta.TypeByteArray, str),
				schema.Leaf("value", schema.Optional, meta.TypeByteArray, schema.Logical{}))),
	)
}

// envelopeRefs are EnvelopeNodeIn's trees as they are inside a schema,
// with their logical types normalized, for comparing with a schema's
// envelope field: in milliseconds, then in microseconds.
var envelopeRefs = func() [2]*schema.Node {
	var refs [2]*schema.Node
	for i, unit := range []schema.TimeUnit{schema.Millis, schema.Micros} {
		s, err := schema.New("envelope", EnvelopeNodeIn(unit))
		if err != nil {
			panic("rowgroup: EnvelopeNode is not a valid schema: " + err.Error())
		}
		refs[i] = s.Fields()[0]
	}
	return refs
}()

// envelopeWriter appends Envelopes to the envelope columns of a row group.
type envelopeWriter struct {
	topic, partition, offset, timestamp *Column
	key                                 *Column
	hkey, hvalue                        *Column
	keyNull                             uint8 // definition level of a null key
	noHeaders                           uint8 // definition level of an empty headers map
	nullValue                           uint8 // definition level of a null header value
	nextRep                             uint8 // repetition level of a header after the first
	micros                              bool  // the timestamp is in microseconds
}

// newEnvelopeWriter checks that n, a top-level field, is the envelope:
// EnvelopeNode's tree, the group itself required or optional.
func newEnvelopeWriter(g *RowGroup, n *schema.Node) (*envelopeWriter, error) {
	if n.IsLeaf() || n.Repetition == schema.Repeated || !sameTree(n.Fields, envelopeRefs[0].Fields) && !sameTree(n.Fields, envelopeRefs[1].Fields) {
		return nil, fmt.Errorf("rowgroup: top-level field %s is reserved for the Kafka envelope and must have the shape of EnvelopeNode:\n%s", EnvelopeField, envelopeText())
	}
	col := func(path ...string) *Column {
		f := n
		for _, p := range path {
			f = f.Field(p)
		}
		return g.Column(f.Column)
	}
	w := &envelopeWriter{
		topic: col("topic"), partition: col("partition"), offset: col("offset"), timestamp: col("timestamp"),
		key: col("key"), hkey: col("headers", "key_value", "key"), hvalue: col("headers", "key_value", "value"),
	}
	w.micros = n.Field("timestamp").Logical.Unit == schema.Micros
	w.keyNull = w.key.maxDef - 1
	w.noHeaders = w.hkey.maxDef - 1
	w.nullValue = w.hvalue.maxDef - 1
	w.nextRep = w.hkey.maxRep
	return w, nil
}

// sameTree compares fields by name, repetition and type, recursively.
func sameTree(a, b []*schema.Node) bool {
	if len(a) != len(b) {
		return false
	}
	for i, x := range a {
		y := b[i]
		if x.Name != y.Name || x.Repetition != y.Repetition || x.IsLeaf() != y.IsLeaf() || x.Logical != y.Logical {
			return false
		}
		if x.IsLeaf() && (x.Physical != y.Physical || x.Length != y.Length) {
			return false
		}
		if !sameTree(x.Fields, y.Fields) {
			return false
		}
	}
	return true
}

func envelopeText() string {
	s, _ := schema.New("m", EnvelopeNode())
	return s.String()
}

// ErrEnvelopeText is wrapped by the error of Builder.Append for a record
// whose envelope has text that its STRING column cannot hold: a topic or a
// header key that is not valid UTF-8. Kafka allows any bytes in a header
// key; such a record is rejected whole (a sink dead-letters it with its
// headers intact) rather than stored with its key altered.
var ErrEnvelopeText = errors.New("rowgroup: envelope text is not valid UTF-8")

// check returns an error wrapping ErrEnvelopeText when e has text that
// is not UTF-8.
func (w *envelopeWriter) check(e *Envelope) error {
	if !utf8.ValidString(e.Topic) {
		return fmt.Errorf("%w: topic %q", ErrEnvelopeText, e.Topic)
	}
	for i := range e.Headers {
		if k := e.Headers[i].Key; !utf8.ValidString(k) {
			return fmt.Errorf("%w: the key of header %d is %q", ErrEnvelopeText, i, k)
		}
	}
	return nil
}

// append adds e, checked by check, to the envelope columns. It cannot
// fail: the columns were checked when the writer was made.
func (w *envelopeWriter) append(e *Envelope) {
	w.topic.appendString(0, e.Topic)
	w.partition.AppendInt32(0, e.Partition)
	w.offset.AppendInt64(0, e.Offset)
	if w.micros {
		// Kafka's milliseconds, exactly: a replay divides them back.
		w.timestamp.AppendInt64(0, e.Timestamp.UnixMilli()*1000)
	} else {
		w.timestamp.AppendInt64(0, e.Timestamp.UnixMilli())
	}
	if e.Key == nil {
		w.key.Null(0, w.keyNull)
	} else {
		w.key.AppendBytes(0, e.Key)
	}
	if len(e.Headers) == 0 {
		w.hkey.Null(0, w.noHeaders)
		w.hvalue.Null(0, w.noHeaders)
		return
	}
	rep := uint8(0)
	for i := range e.Headers {
		h := &e.Headers[i]
		w.hkey.appendString(rep, h.Key)
		if h.Value == nil {
			w.hvalue.Null(rep, w.nullValue)
		} else {
			w.hvalue.AppendBytes(rep, h.Value)
		}
		rep = w.nextRep
	}
}
