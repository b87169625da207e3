package events

import (
	"encoding/json"
	"fmt"
	"math"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
)

// ProtoSchema is the reference event as a Protobuf message,
// pqsink.bench.Event (schema/protobuf/testdata/event.proto): its JSON
// reads as this message with protojson.
const ProtoSchema = `syntax = "proto3";

package pqsink.bench;

import "google/protobuf/timestamp.proto";

message Event {
  int64 id = 1;
  google.protobuf.Timestamp ts = 2;
  string user = 3;
  string country = 4;
  double amount = 5;
  repeated string tags = 6;
  Payload payload = 7;
}

message Payload {
  string session = 1;
  Nested nested = 2;
}

message Nested {
  int32 level = 1;
  bool flag = 2;
  double score = 3;
}
`

// ProtoMessage is the full name of the message of ProtoSchema.
const ProtoMessage = "pqsink.bench.Event"

// AppendProto appends the Protobuf encoding of a reference event (its
// JSON, as Append writes it) as a message of ProtoSchema, as Go's protobuf
// library encodes it: fields in number order, defaults left out.
func AppendProto(dst, event []byte) ([]byte, error) {
	var e struct {
		ID      int64    `json:"id"`
		TS      string   `json:"ts"`
		User    string   `json:"user"`
		Country string   `json:"country"`
		Amount  float64  `json:"amount"`
		Tags    []string `json:"tags"`
		Payload *struct {
			Session string `json:"session"`
			Nested  *struct {
				Level int32   `json:"level"`
				Flag  bool    `json:"flag"`
				Score float64 `json:"score"`
			} `json:"nested"`
		} `json:"payload"`
	}
	if err := json.Unmarshal(event, &e); err != nil {
		return dst, fmt.Errorf("events: %w", err)
	}
	ts, err := time.Parse(time.RFC3339Nano, e.TS)
	if err != nil {
		return dst, fmt.Errorf("events: ts: %w", err)
	}
	str := func(b []byte, n protowire.Number, s string) []byte {
		if s == "" {
			return b
		}
		return protowire.AppendString(protowire.AppendTag(b, n, protowire.BytesType), s)
	}
	double := func(b []byte, n protowire.Number, f float64) []byte {
		if math.Float64bits(f) == 0 {
			return b
		}
		return protowire.AppendFixed64(protowire.AppendTag(b, n, protowire.Fixed64Type), math.Float64bits(f))
	}
	varint := func(b []byte, n protowire.Number, v uint64) []byte {
		if v == 0 {
			return b
		}
		return protowire.AppendVarint(protowire.AppendTag(b, n, protowire.VarintType), v)
	}
	dst = varint(dst, 1, uint64(e.ID))
	var t []byte
	t = varint(t, 1, uint64(ts.Unix()))
	t = varint(t, 2, uint64(ts.Nanosecond()))
	dst = protowire.AppendBytes(protowire.AppendTag(dst, 2, protowire.BytesType), t)
	dst = str(dst, 3, e.User)
	dst = str(dst, 4, e.Country)
	dst = double(dst, 5, e.Amount)
	for _, tag := range e.Tags {
		dst = protowire.AppendString(protowire.AppendTag(dst, 6, protowire.BytesType), tag)
	}
	if p := e.Payload; p != nil {
		var pb []byte
		pb = str(pb, 1, p.Session)
		if n := p.Nested; n != nil {
			var nb []byte
			nb = varint(nb, 1, uint64(int64(n.Level)))
			if n.Flag {
				nb = varint(nb, 2, 1)
			}
			nb = double(nb, 3, n.Score)
			pb = protowire.AppendBytes(protowire.AppendTag(pb, 2, protowire.BytesType), nb)
		}
		dst = protowire.AppendBytes(protowire.AppendTag(dst, 7, protowire.BytesType), pb)
	}
	return dst, nil
}
