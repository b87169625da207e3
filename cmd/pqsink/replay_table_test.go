package main

import (
	"slices"
	"strings"
	"testing"
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
