// Package avroevents encodes the sink's reference records
// (internal/events) in Avro binary, with the schema of
// schema/avro/testdata/event.avsc, for tests and benchmarks that compare
// Avro input with the same records as JSON. Test-only.
package avroevents

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/pqsink/pqsink/schema/avro"
)

// Schema is schema/avro/testdata/event.avsc: its Parquet schema is
// events.Schema.
const Schema = `{"type":"record","name":"event","namespace":"pqsink.bench",
 "fields":[{"name":"id","type":"long"},
  {"name":"ts","type":{"type":"long","logicalType":"timestamp-micros"}},
  {"name":"user","type":"string"},{"name":"country","type":"string"},{"name":"amount","type":"double"},
  {"name":"tags","type":["null",{"type":"array","items":"string"}],"default":null},
  {"name":"payload","type":["null",{"type":"record","name":"payload","fields":[
    {"name":"session","type":"string"},
    {"name":"nested","type":["null",{"type":"record","name":"nested","fields":[
      {"name":"level","type":"int"},{"name":"flag","type":"boolean"},{"name":"score","type":"double"}]}],"default":null}]}],"default":null}]}`

type event struct {
	ID      int64     `json:"id"`
	TS      time.Time `json:"ts"`
	User    string    `json:"user"`
	Country string    `json:"country"`
	Amount  float64   `json:"amount"`
	Tags    []string  `json:"tags"`
	Payload *struct {
		Session string `json:"session"`
		Nested  *struct {
			Level int32   `json:"level"`
			Flag  bool    `json:"flag"`
			Score float64 `json:"score"`
		} `json:"nested"`
	} `json:"payload"`
}

// Append appends the Avro binary encoding of one JSON record of
// internal/events to dst.
func Append(dst, record []byte) ([]byte, error) {
	var e event
	if err := json.Unmarshal(record, &e); err != nil {
		return nil, fmt.Errorf("avroevents: %w", err)
	}
	str := func(s string) {
		dst = avro.AppendLong(dst, int64(len(s)))
		dst = append(dst, s...)
	}
	dbl := func(f float64) { dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(f)) }
	dst = avro.AppendLong(dst, e.ID)
	dst = avro.AppendLong(dst, e.TS.UnixMicro())
	str(e.User)
	str(e.Country)
	dbl(e.Amount)
	if e.Tags == nil {
		dst = avro.AppendLong(dst, 0)
	} else {
		dst = avro.AppendLong(dst, 1)
		if len(e.Tags) > 0 {
			dst = avro.AppendLong(dst, int64(len(e.Tags)))
			for _, t := range e.Tags {
				str(t)
			}
		}
		dst = avro.AppendLong(dst, 0)
	}
	if e.Payload == nil {
		return avro.AppendLong(dst, 0), nil
	}
	dst = avro.AppendLong(dst, 1)
	str(e.Payload.Session)
	if n := e.Payload.Nested; n == nil {
		dst = avro.AppendLong(dst, 0)
	} else {
		dst = avro.AppendLong(dst, 1)
		dst = avro.AppendLong(dst, int64(n.Level))
		if n.Flag {
			dst = append(dst, 1)
		} else {
			dst = append(dst, 0)
		}
		dbl(n.Score)
	}
	return dst, nil
}
