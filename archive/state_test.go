package archive

import (
	"fmt"
	"maps"
	"strings"
	"testing"
)

// TestCommitMetadata: a skip set comes back whole from its metadata,
// inline when short and through a state object when too long for the
// broker.
func TestCommitMetadata(t *testing.T) {
	small := map[string]int64{"a/\x00.parquet": 10}
	md, key, doc, err := EncodeCommit("g", "t", 1, 5, small)
	if err != nil || key != "" || doc != nil || md != `pqsink1:{"paths":{"a/\u0000.parquet":10}}` {
		t.Fatalf("small set: %q %q %q %v", md, key, doc, err)
	}
	got, key, err := DecodeCommit(md)
	if err != nil || key != "" || !maps.Equal(got, small) {
		t.Fatalf("small set back: %v %q %v", got, key, err)
	}

	big := map[string]int64{}
	for i := range 300 {
		big[fmt.Sprintf("events/dt=2026-01-%02d/hr=%02d/\x00.parquet", i%28+1, i%24)+strings.Repeat("x", i%7)] = int64(1000 + i)
	}
	md, key, doc, err = EncodeCommit("my/group", "t", 1, 5, big)
	if err != nil {
		t.Fatal(err)
	}
	if md != CommitState+key || len(md) > 300 ||
		!strings.HasPrefix(key, "_pqsink/state/my%2Fgroup/t/1/00000000000000000005-") || !strings.HasSuffix(key, ".json") {
		t.Fatalf("big set: metadata %q, key %q", md, key)
	}
	// The key is a function of the content.
	if md2, key2, doc2, err := EncodeCommit("my/group", "t", 1, 5, big); err != nil || md2 != md || key2 != key || string(doc2) != string(doc) {
		t.Fatalf("second encoding: %q %q, %v", md2, key2, err)
	}
	skips, named, err := DecodeCommit(md)
	if err != nil || skips != nil || named != key {
		t.Fatalf("big set back: %v %q %v", skips, named, err)
	}
	if got, err = DecodeState(doc); err != nil || !maps.Equal(got, big) {
		t.Fatalf("state object back: %d entries, %v", len(got), err)
	}

	for _, md := range []string{"", "someone else's", "pqsink2:{}"} {
		got, key, err := DecodeCommit(md)
		if err != nil || key != "" || got == nil || len(got) != 0 {
			t.Errorf("%q: %v %q %v, want an empty set", md, got, key, err)
		}
	}
	if md, key, doc, err := EncodeCommit("g", "t", 1, 5, nil); md != "" || key != "" || doc != nil || err != nil {
		t.Errorf("empty set: %q %q %q %v", md, key, doc, err)
	}
	if got, err := DecodeState([]byte(`{}`)); err != nil || got == nil || len(got) != 0 {
		t.Errorf("no paths: %v %v", got, err)
	}
	if _, _, err := DecodeCommit(CommitInline + "{not json"); err == nil || !strings.Contains(err.Error(), "commit metadata is not pqsink's") {
		t.Errorf("corrupt metadata: %v", err)
	}
}
