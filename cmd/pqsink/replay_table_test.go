package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/pqsink/pqsink/connector/source"
	"github.com/pqsink/pqsink/table"
)

// TestParseTableRef reads --from iceberg:NAMESPACE.TABLE[@SNAPSHOT_ID]:
// nested namespaces, table names with dots (a topic's) under the
// configured namespace, and the mistakes, each with what to write.
func TestParseTableRef(t *testing.T) {
	tests := []struct {
		from, namespace string
		ident           []string
		snapshot        int64
		err             string
	}{
		{"iceberg:kafka.orders", "kafka", []string{"kafka", "orders"}, 0, ""},
		{"iceberg:kafka.orders@42", "kafka", []string{"kafka", "orders"}, 42, ""},
		{"iceberg:kafka.orders", "", []string{"kafka", "orders"}, 0, ""},
		{"iceberg:lake.raw.orders", "lake.raw", []string{"lake", "raw", "orders"}, 0, ""},
		{"iceberg:lake.raw.orders", "other", []string{"lake", "raw", "orders"}, 0, ""},
		{"iceberg:kafka.app.events@7", "kafka", []string{"kafka", "app.events"}, 7, ""},
		{"iceberg:kafka", "kafka", nil, 0, "want iceberg:NAMESPACE.TABLE"},
		{"iceberg:kafka.", "kafka", nil, 0, "want iceberg:NAMESPACE.TABLE"},
		{"iceberg:.orders", "", nil, 0, "want iceberg:NAMESPACE.TABLE"},
		{"iceberg:kafka.orders@", "kafka", nil, 0, "snapshot id"},
		{"iceberg:kafka.orders@-3", "kafka", nil, 0, "snapshot id"},
		{"iceberg:kafka.orders@current", "kafka", nil, 0, "snapshot id"},
	}
	for _, tc := range tests {
		t.Run(tc.from, func(t *testing.T) {
			ref, err := parseTableRef(tc.from, tc.namespace)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Errorf("err = %v, want one saying %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(ref.ident, tc.ident) || ref.snapshot != tc.snapshot {
				t.Errorf("got %q @%d, want %q @%d", ref.ident, ref.snapshot, tc.ident, tc.snapshot)
			}
		})
	}
}

// TestManifestBounds: a manifest's bounds reach the replay with the
// table's microseconds as the replay's milliseconds, rounded toward zero
// as the replay rounds each record's timestamp; a file the manifest
// bounds nothing of has no Bounds.
func TestManifestBounds(t *testing.T) {
	full := func(lo, hi int64) table.Range[int64] {
		return table.Range[int64]{Min: lo, Max: hi, HasMin: true, HasMax: true}
	}
	tests := []struct {
		name string
		in   table.Envelope
		want *source.Bounds
	}{
		{"nothing known", table.Envelope{}, nil},
		{"every bound", table.Envelope{Timestamp: full(1_700_000_000_123_999, 1_700_000_001_000_000), Offset: full(10, 19), Partition: full(2, 2),
			Topic: table.Range[string]{Min: "a", Max: "b", HasMin: true, HasMax: true}},
			&source.Bounds{Time: source.IntRange{Min: 1_700_000_000_123, Max: 1_700_000_001_000, HasMin: true, HasMax: true},
				Offset: source.IntRange{Min: 10, Max: 19, HasMin: true, HasMax: true}, Partition: source.IntRange{Min: 2, Max: 2, HasMin: true, HasMax: true},
				Topic: source.StringRange{Min: "a", Max: "b", HasMin: true, HasMax: true}}},
		{"before 1970, only an upper time bound", table.Envelope{Timestamp: table.Range[int64]{Max: -1_500, HasMax: true}},
			&source.Bounds{Time: source.IntRange{Max: -1, HasMax: true}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := manifestBounds(tc.in)
			if (got == nil) != (tc.want == nil) || got != nil && *got != *tc.want {
				t.Errorf("manifestBounds(%+v) = %+v, want %+v", tc.in, got, tc.want)
			}
		})
	}
}
