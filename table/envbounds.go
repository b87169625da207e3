package table

import (
	"github.com/apache/iceberg-go"
	itable "github.com/apache/iceberg-go/table"
)

// Envelope is what a snapshot's manifest says of a data file's Kafka
// envelope columns (_kafka.timestamp, .offset, .partition, .topic): their
// lower and upper bounds. A bound the manifest does not hold (another
// engine's file without metrics, a column the table lacks, bytes that do
// not decode as the column's type) is unknown, and rules nothing out.
type Envelope struct {
	// Timestamp bounds the records' _kafka.timestamp, in microseconds
	// since the Unix epoch (the unit of Iceberg's timestamp types).
	Timestamp Range[int64]
	// Offset bounds the records' Kafka offsets.
	Offset Range[int64]
	// Partition bounds the records' Kafka partitions.
	Partition Range[int64]
	// Topic bounds the records' topics, compared byte-wise. Iceberg
	// writers may truncate a string bound: the lower bound is then a
	// prefix of the least topic; the upper bound is a prefix of the
	// greatest, possibly with its last character incremented.
	Topic Range[string]
}

// Range is a lower and an upper bound of a column's values in a data
// file, each known or not.
type Range[T int64 | string] struct {
	Min, Max       T
	HasMin, HasMax bool
}

// envelopeField is the field of an envelope column in a table's schema.
type envelopeField struct {
	id  int
	typ iceberg.Type
}

// envelopeFields finds the envelope columns by name in the schema of snap
// (the table's current schema when snap names none): the field ids their
// bounds are under in the manifests. A column the schema lacks has id 0.
func envelopeFields(md itable.Metadata, snap *itable.Snapshot) (ts, off, part, topic envelopeField) {
	sch := md.CurrentSchema()
	if snap.SchemaID != nil {
		for _, s := range md.Schemas() {
			if s.ID == *snap.SchemaID {
				sch = s
			}
		}
	}
	find := func(name string) envelopeField {
		f, ok := sch.FindFieldByName("_kafka." + name)
		if !ok {
			return envelopeField{}
		}
		return envelopeField{id: f.ID, typ: f.Type}
	}
	return find("timestamp"), find("offset"), find("partition"), find("topic")
}

// envelopeOf decodes the bounds of df's envelope columns from its
// manifest entry.
func envelopeOf(df iceberg.DataFile, ts, off, part, topic envelopeField) Envelope {
	lower, upper := df.LowerBoundValues(), df.UpperBoundValues()
	var e Envelope
	e.Timestamp.Min, e.Timestamp.HasMin = intBound(ts, lower)
	e.Timestamp.Max, e.Timestamp.HasMax = intBound(ts, upper)
	e.Offset.Min, e.Offset.HasMin = intBound(off, lower)
	e.Offset.Max, e.Offset.HasMax = intBound(off, upper)
	e.Partition.Min, e.Partition.HasMin = intBound(part, lower)
	e.Partition.Max, e.Partition.HasMax = intBound(part, upper)
	e.Topic.Min, e.Topic.HasMin = stringBound(topic, lower)
	e.Topic.Max, e.Topic.HasMax = stringBound(topic, upper)
	return e
}

// intBound decodes the bound of field f in bounds (field id → Iceberg's
// single-value serialization) as an integer: an int, a long, or a
// timestamp in microseconds. ok is false when there is none or it does
// not decode (a nanosecond timestamp is not taken either).
func intBound(f envelopeField, bounds map[int][]byte) (v int64, ok bool) {
	b, found := bounds[f.id]
	if f.id == 0 || !found {
		return 0, false
	}
	lit, err := iceberg.LiteralFromBytes(f.typ, b)
	if err != nil {
		return 0, false
	}
	switch l := lit.(type) {
	case iceberg.Int32Literal:
		return int64(l), true
	case iceberg.Int64Literal:
		return int64(l), true
	case iceberg.TimestampLiteral:
		return int64(l), true
	}
	return 0, false
}

// stringBound is intBound for a string column.
func stringBound(f envelopeField, bounds map[int][]byte) (string, bool) {
	b, found := bounds[f.id]
	if f.id == 0 || !found {
		return "", false
	}
	lit, err := iceberg.LiteralFromBytes(f.typ, b)
	if err != nil {
		return "", false
	}
	if l, ok := lit.(iceberg.StringLiteral); ok {
		return string(l), true
	}
	return "", false
}
