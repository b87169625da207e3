package archive

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/pqsink/pqsink/meta"
)

// Footer key-value entries that record a file's Kafka range: every file's
// footer says where its records came from, so that the adoption of an
// existing object and replay need nothing but the file.
const (
	FooterTopic       = "pqsink.kafka.topic"
	FooterPartition   = "pqsink.kafka.partition"
	FooterFirstOffset = "pqsink.kafka.first_offset"
	FooterLastOffset  = "pqsink.kafka.last_offset"
	FooterRecords     = "pqsink.kafka.records"
)

// ErrForeign is wrapped by the error of ReadRange for a footer without
// pqsink's entries: a file the sink did not write.
var ErrForeign = errors.New("not a pqsink file")

// Range is the Kafka range of a file: the records of one partition from
// offset First to offset Last, Records of them.
type Range struct {
	Topic       string
	Partition   int32
	First, Last int64
	Records     int64
}

// Footer gives the footer entries of r to set, always in the same order.
func (r Range) Footer(set func(key, value string)) {
	set(FooterTopic, r.Topic)
	set(FooterPartition, strconv.Itoa(int(r.Partition)))
	set(FooterFirstOffset, strconv.FormatInt(r.First, 10))
	set(FooterLastOffset, strconv.FormatInt(r.Last, 10))
	set(FooterRecords, strconv.FormatInt(r.Records, 10))
}

// ReadRange reads the Kafka range of a file from its footer's key-value
// metadata. A footer without a topic wraps ErrForeign; one of a file that
// holds several ranges (FooterRanges) wraps ErrSeveralRanges: ReadRanges
// reads both kinds.
func ReadRange(kvs []meta.KeyValue) (Range, error) {
	kv := map[string]string{}
	for _, e := range kvs {
		if e.Value != nil {
			kv[e.Key] = *e.Value
		}
	}
	var r Range
	if _, ok := kv[FooterRanges]; ok {
		return r, fmt.Errorf("footer has %s: %w; this reader takes files of one range", FooterRanges, ErrSeveralRanges)
	}
	r.Topic = kv[FooterTopic]
	if r.Topic == "" {
		return r, fmt.Errorf("footer has no %s: %w", FooterTopic, ErrForeign)
	}
	for _, f := range []struct {
		key string
		dst *int64
	}{{FooterFirstOffset, &r.First}, {FooterLastOffset, &r.Last}, {FooterRecords, &r.Records}} {
		v, err := strconv.ParseInt(kv[f.key], 10, 64)
		if err != nil {
			return r, fmt.Errorf("footer %s: %w", f.key, err)
		}
		*f.dst = v
	}
	p, err := strconv.ParseInt(kv[FooterPartition], 10, 32)
	if err != nil {
		return r, fmt.Errorf("footer %s: %w", FooterPartition, err)
	}
	r.Partition = int32(p)
	return r, nil
}
