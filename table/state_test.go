package table

import (
	"maps"
	"slices"
	"strings"
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

// TestStateIndex: an upsert partition's key index chain is kept in the
// state document, left out when there is none (a document without it
// reads as none), and Merge keeps the index of the later committed
// offset.
func TestStateIndex(t *testing.T) {
	k := Partition{"g", "t", 0}
	chain := []string{"db/t/index/t/0/1-0000000a.pqkidx", "db/t/index/t/0/2-0000000b.pqkidx"}
	s := State{k: {Committed: 10, Paths: map[string]int64{}, Index: chain}}
	doc, err := s.encode()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), `"index":["db/t/index/t/0/1-0000000a.pqkidx","db/t/index/t/0/2-0000000b.pqkidx"]`) {
		t.Errorf("document %s lacks the index", doc)
	}
	back, err := decodeState(doc)
	if err != nil || !slices.Equal(back[k].Index, chain) || !back[k].equal(s[k]) {
		t.Errorf("read back: %+v, %v", back, err)
	}
	plain, err := State{k: {Committed: 10}}.encode()
	if err != nil || strings.Contains(string(plain), "index") {
		t.Errorf("an append partition's document %s, %v", plain, err)
	}
	old, err := decodeState([]byte(`{"partitions":[{"group":"g","topic":"t","partition":0,"committed":7,"paths":{}}]}`))
	if err != nil || old[k].Index != nil || old[k].Committed != 7 {
		t.Errorf("a document without index: %+v, %v", old, err)
	}
	later := []string{"db/t/index/t/0/3-0000000c.pqkidx"}
	for _, c := range []struct {
		name string
		p, q Progress
		want []string
	}{
		{"later q", Progress{Committed: 10, Index: chain}, Progress{Committed: 12, Index: later}, later},
		{"later p", Progress{Committed: 12, Index: later}, Progress{Committed: 10, Index: chain}, later},
		{"same offset", Progress{Committed: 10, Index: chain}, Progress{Committed: 10, Index: later}, later},
		{"same offset, q without", Progress{Committed: 10, Index: chain}, Progress{Committed: 10}, chain},
		{"later q without", Progress{Committed: 10, Index: chain}, Progress{Committed: 12}, nil},
	} {
		if got := c.p.Merge(c.q).Index; !slices.Equal(got, c.want) {
			t.Errorf("%s: Merge's index %v, want %v", c.name, got, c.want)
		}
	}
}
