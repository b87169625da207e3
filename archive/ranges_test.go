package archive

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/pqsink/pqsink/meta"
)

// rangesFooter is the key-value metadata WriteRanges gives for rs.
func rangesFooter(t *testing.T, rs []Range) []meta.KeyValue {
	t.Helper()
	var kvs []meta.KeyValue
	if err := WriteRanges(rs, func(key, value string) {
		kvs = append(kvs, meta.KeyValue{Key: key, Value: &value})
	}); err != nil {
		t.Fatal(err)
	}
	return kvs
}

func TestCoalesce(t *testing.T) {
	tests := []struct {
		name string
		in   []Range
		want []Range
	}{
		{"one", []Range{{"t", 0, 0, 9, 10}}, []Range{{"t", 0, 0, 9, 10}}},
		{"consecutive files of a partition", []Range{{"t", 0, 0, 9, 10}, {"t", 0, 10, 19, 4}, {"t", 0, 20, 20, 1}},
			[]Range{{"t", 0, 0, 20, 15}}},
		{"a gap", []Range{{"t", 0, 0, 9, 10}, {"t", 0, 11, 19, 9}}, []Range{{"t", 0, 0, 9, 10}, {"t", 0, 11, 19, 9}}},
		{"partitions", []Range{{"t", 0, 0, 9, 10}, {"t", 1, 10, 19, 10}}, []Range{{"t", 0, 0, 9, 10}, {"t", 1, 10, 19, 10}}},
		{"topics", []Range{{"a", 0, 0, 9, 10}, {"b", 0, 10, 19, 10}}, []Range{{"a", 0, 0, 9, 10}, {"b", 0, 10, 19, 10}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := append([]Range(nil), tt.in...)
			if got := Coalesce(tt.in); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Coalesce = %+v, want %+v", got, tt.want)
			}
			if !reflect.DeepEqual(in, tt.in) {
				t.Errorf("Coalesce changed its input to %+v", tt.in)
			}
		})
	}
}

func TestWriteReadRanges(t *testing.T) {
	tests := []struct {
		name string
		rs   []Range
		keys string
	}{
		{"one range keeps the five keys", []Range{{"clicks", 3, 100, 199, 80}},
			"pqsink.kafka.topic pqsink.kafka.partition pqsink.kafka.first_offset pqsink.kafka.last_offset pqsink.kafka.records"},
		{"partitions", []Range{{"clicks", 0, 0, 99, 100}, {"clicks", 1, 7, 50, 44}}, "pqsink.kafka.ranges pqsink.kafka.records"},
		{"runs of one partition", []Range{{"clicks", 0, 0, 99, 100}, {"clicks", 0, 200, 299, 3}}, "pqsink.kafka.ranges pqsink.kafka.records"},
		{"topics", []Range{{"a", 5, 0, 0, 1}, {"b", 0, 9223372036854775806, 9223372036854775807, 2}}, "pqsink.kafka.ranges pqsink.kafka.records"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kvs := rangesFooter(t, tt.rs)
			var keys []string
			for _, kv := range kvs {
				keys = append(keys, kv.Key)
			}
			if got := strings.Join(keys, " "); got != tt.keys {
				t.Errorf("keys %s, want %s", got, tt.keys)
			}
			got, err := ReadRanges(kvs)
			if err != nil || !reflect.DeepEqual(got, tt.rs) {
				t.Errorf("ReadRanges = %+v, %v; want %+v", got, err, tt.rs)
			}
			_, err = ReadRange(kvs)
			if several := len(tt.rs) > 1; several != errors.Is(err, ErrSeveralRanges) || (!several && err != nil) {
				t.Errorf("ReadRange of %d ranges: %v", len(tt.rs), err)
			}
		})
	}
	if got := rangesFooter(t, []Range{{"clicks", 0, 0, 99, 100}, {"clicks", 1, 7, 50, 44}}); *got[0].Value !=
		`[{"topic":"clicks","partition":0,"first_offset":0,"last_offset":99,"records":100},{"topic":"clicks","partition":1,"first_offset":7,"last_offset":50,"records":44}]` ||
		*got[1].Value != "144" {
		t.Errorf("entries %s = %s, %s = %s", got[0].Key, *got[0].Value, got[1].Key, *got[1].Value)
	}
}

func TestRangesErrors(t *testing.T) {
	s := func(v string) *string { return &v }
	kv := func(pairs ...string) []meta.KeyValue {
		var kvs []meta.KeyValue
		for i := 0; i < len(pairs); i += 2 {
			kvs = append(kvs, meta.KeyValue{Key: pairs[i], Value: s(pairs[i+1])})
		}
		return kvs
	}
	const two = `[{"topic":"t","partition":0,"first_offset":0,"last_offset":9,"records":10},{"topic":"t","partition":1,"first_offset":0,"last_offset":9,"records":10}]`
	tests := []struct {
		name string
		kvs  []meta.KeyValue
		want string
	}{
		{"foreign", nil, "not a pqsink file"},
		{"not json", kv(FooterRanges, "[{", FooterRecords, "1"), "pqsink.kafka.ranges: unexpected EOF"},
		{"unknown field", kv(FooterRanges, `[{"topic":"t","partition":0,"first_offset":0,"last_offset":0,"records":1,"x":1}]`, FooterRecords, "1"), `unknown field "x"`},
		{"trailing text", kv(FooterRanges, two+"[]", FooterRecords, "20"), "text after the array"},
		{"empty", kv(FooterRanges, `[]`, FooterRecords, "0"), "no Kafka range"},
		{"no topic", kv(FooterRanges, `[{"partition":0,"first_offset":0,"last_offset":0,"records":1}]`, FooterRecords, "1"), "range 0 has no topic"},
		{"backwards", kv(FooterRanges, `[{"topic":"t","partition":0,"first_offset":5,"last_offset":4,"records":1}]`, FooterRecords, "1"), "is not a range of offsets"},
		{"too many records", kv(FooterRanges, `[{"topic":"t","partition":0,"first_offset":0,"last_offset":4,"records":6}]`, FooterRecords, "6"), "cannot hold 6 records"},
		{"out of order", kv(FooterRanges, `[{"topic":"t","partition":1,"first_offset":0,"last_offset":4,"records":5},{"topic":"t","partition":0,"first_offset":0,"last_offset":4,"records":5}]`, FooterRecords, "10"), "is not after range 0"},
		{"overlap", kv(FooterRanges, `[{"topic":"t","partition":0,"first_offset":0,"last_offset":4,"records":5},{"topic":"t","partition":0,"first_offset":4,"last_offset":8,"records":5}]`, FooterRecords, "10"), "is not after range 0"},
		{"no records entry", kv(FooterRanges, two), "without pqsink.kafka.records"},
		{"records disagree", kv(FooterRanges, two, FooterRecords, "21"), "is 21, the ranges of pqsink.kafka.ranges hold 20"},
		{"both forms", kv(FooterRanges, two, FooterRecords, "20", FooterTopic, "t"), "both pqsink.kafka.ranges and pqsink.kafka.topic"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ReadRanges(tt.kvs)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("ReadRanges: %v, want an error with %q", err, tt.want)
			}
		})
	}
	if err := WriteRanges([]Range{{"t", 0, 0, 9, 10}, {"t", 0, 5, 19, 10}}, func(string, string) {}); err == nil {
		t.Error("WriteRanges accepted overlapping ranges")
	}
}

// FuzzReadRanges: any footer entries read without a panic, and ranges that
// are read write back to entries that read the same.
func FuzzReadRanges(f *testing.F) {
	f.Add(`[{"topic":"clicks","partition":0,"first_offset":0,"last_offset":99,"records":100},{"topic":"clicks","partition":1,"first_offset":7,"last_offset":50,"records":44}]`, "144")
	f.Add(`[{"topic":"t","partition":0,"first_offset":0,"last_offset":9,"records":10}]`, "10")
	f.Add(`[{"topic":"t","partition":0,"first_offset":9223372036854775806,"last_offset":9223372036854775807,"records":2},{"topic":"u","partition":2147483647,"first_offset":0,"last_offset":0,"records":1}]`, "3")
	f.Add(`[]`, "0")
	f.Add(`[{"topic":"t","partition":-1,"first_offset":5,"last_offset":4,"records":0}]`, "-1")
	f.Add(`{"topic":"t"}`, "x")
	f.Fuzz(func(t *testing.T, doc, records string) {
		kvs := []meta.KeyValue{{Key: FooterRanges, Value: &doc}, {Key: FooterRecords, Value: &records}}
		rs, err := ReadRanges(kvs)
		if err != nil {
			return
		}
		var again []meta.KeyValue
		if err := WriteRanges(rs, func(key, value string) {
			again = append(again, meta.KeyValue{Key: key, Value: &value})
		}); err != nil {
			t.Fatalf("ranges %+v read, not written: %v", rs, err)
		}
		back, err := ReadRanges(again)
		if err != nil || !reflect.DeepEqual(back, rs) {
			t.Fatalf("ranges %+v written and read back as %+v, %v", rs, back, err)
		}
	})
}
