package archive

import (
	"errors"
	"strings"
	"testing"

	"github.com/pqsink/pqsink/meta"
)

// footerOf is the key-value metadata set gives Range.Footer's entries to.
func footerOf(r Range) []meta.KeyValue {
	var kvs []meta.KeyValue
	r.Footer(func(key, value string) {
		kvs = append(kvs, meta.KeyValue{Key: key, Value: &value})
	})
	return kvs
}

func TestRangeFooter(t *testing.T) {
	r := Range{Topic: "events", Partition: 2147483647, First: 42, Last: 9223372036854775807, Records: 17}
	kvs := footerOf(r)
	var keys []string
	for _, kv := range kvs {
		keys = append(keys, kv.Key)
	}
	if got := strings.Join(keys, " "); got != "pqsink.kafka.topic pqsink.kafka.partition pqsink.kafka.first_offset pqsink.kafka.last_offset pqsink.kafka.records" {
		t.Errorf("footer keys %s", got)
	}
	if *kvs[1].Value != "2147483647" || *kvs[3].Value != "9223372036854775807" {
		t.Errorf("footer values %q %q", *kvs[1].Value, *kvs[3].Value)
	}
	other := "x"
	kvs = append([]meta.KeyValue{{Key: "pqsink.version", Value: &other}, {Key: FooterTopic}}, kvs...)
	got, err := ReadRange(kvs)
	if err != nil || got != r {
		t.Errorf("read back %+v, %v; want %+v", got, err, r)
	}
}

func TestReadRangeErrors(t *testing.T) {
	s := func(v string) *string { return &v }
	good := footerOf(Range{Topic: "t", Partition: 1, First: 2, Last: 3, Records: 2})
	with := func(key string, value *string) []meta.KeyValue {
		kvs := append([]meta.KeyValue(nil), good...)
		for i := range kvs {
			if kvs[i].Key == key {
				kvs[i].Value = value
			}
		}
		return kvs
	}
	tests := []struct {
		name    string
		kvs     []meta.KeyValue
		want    string
		foreign bool
	}{
		{"no metadata", nil, "footer has no pqsink.kafka.topic: not a pqsink file", true},
		{"null topic", with(FooterTopic, nil), "footer has no pqsink.kafka.topic", true},
		{"empty topic", with(FooterTopic, s("")), "footer has no pqsink.kafka.topic", true},
		{"bad partition", with(FooterPartition, s("2147483648")), "footer pqsink.kafka.partition: ", false},
		{"no first offset", with(FooterFirstOffset, nil), "footer pqsink.kafka.first_offset: ", false},
		{"bad last offset", with(FooterLastOffset, s("x")), "footer pqsink.kafka.last_offset: ", false},
		{"bad records", with(FooterRecords, s("")), "footer pqsink.kafka.records: ", false},
	}
	for _, tc := range tests {
		_, err := ReadRange(tc.kvs)
		if err == nil || !strings.Contains(err.Error(), tc.want) || errors.Is(err, ErrForeign) != tc.foreign {
			t.Errorf("%s: got %v, want an error containing %q (foreign %v)", tc.name, err, tc.want, tc.foreign)
		}
	}
}
