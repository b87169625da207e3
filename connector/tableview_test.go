package connector

import (
	"maps"
	"testing"
)

// TestSkipSetPaths: what a partition matches against its table's views is
// its skip set's object paths, the dead letters' entry left out, as a
// copy that the views cannot change.
func TestSkipSetPaths(t *testing.T) {
	for _, tc := range []struct {
		name string
		skip skipSet
		want map[string]int64
	}{
		{"none", skipSet{}, map[string]int64{}},
		{"dead letters only", skipSet{deadLetterID: 9}, map[string]int64{}},
		{"paths and dead letters", skipSet{"a/t+0+5.parquet": 7, deadLetterID: 9}, map[string]int64{"a/t+0+5.parquet": 7}},
		{"paths", skipSet{"a": 1, "b": 2}, map[string]int64{"a": 1, "b": 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.skip.paths()
			if !maps.Equal(got, tc.want) {
				t.Errorf("paths %v, want %v", got, tc.want)
			}
			got["x"] = 1
			if _, ok := tc.skip["x"]; ok {
				t.Error("the paths share the skip set's map")
			}
		})
	}
}
