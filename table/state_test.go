package table

import (
	"maps"
	"testing"
)

// TestStateAs: what the table holds of a Kafka partition is the union of
// every group's entries for it, whichever group asks.
func TestStateAs(t *testing.T) {
	five := 5
	s := State{
		{Group: "v1", Topic: "t", Partition: 0}: {Committed: 100, Paths: map[string]int64{"a": 150, "b": 90}},
		{Group: "v2", Topic: "t", Partition: 0}: {Committed: 120, Paths: map[string]int64{"c": 130}, SpecID: &five},
		{Group: "v1", Topic: "t", Partition: 1}: {Committed: 7},
		{Group: "", Topic: "u", Partition: 0}:   {Committed: 3, Paths: map[string]int64{"d": 9}},
	}
	got := s.As("new")
	want := State{
		{Group: "new", Topic: "t", Partition: 0}: {Committed: 120, Paths: map[string]int64{"a": 150, "c": 130}},
		{Group: "new", Topic: "t", Partition: 1}: {Committed: 7, Paths: map[string]int64{}},
		{Group: "new", Topic: "u", Partition: 0}: {Committed: 3, Paths: map[string]int64{"d": 9}},
	}
	if len(got) != len(want) {
		t.Fatalf("As gives %v, want %v", got, want)
	}
	for k, w := range want {
		if g, ok := got[k]; !ok || g.Committed != w.Committed || !maps.Equal(g.Paths, w.Paths) {
			t.Errorf("%v: %+v, want %+v", k, g, w)
		}
	}
	if p := got[Partition{"new", "t", 0}]; p.covered("b") != 119 || p.covered("a") != 150 {
		t.Errorf("covered b %d a %d, want 119 and 150", p.covered("b"), p.covered("a"))
	}
}
