package deadletter

import (
	"bufio"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/pqsink/pqsink/objstore"
	"github.com/pqsink/pqsink/rowgroup"
)

// TestStoreLettersAdopt: dead-letter objects follow the rules of the
// Parquet files. A batch whose first key exists is cut after the existing
// object's last letter, and the rest lands under its own first offset.
func TestStoreLettersAdopt(t *testing.T) {
	ctx := context.Background()
	store, err := objstore.Open(ctx, "file://"+t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	d := &storeLetters{store: store, conditional: true}
	mk := func(offsets ...int64) []Letter {
		var ls []Letter
		for _, o := range offsets {
			ls = append(ls, Letter{Offset: o, Time: time.UnixMilli(1700000000000 + o), Key: []byte("k"), Value: []byte{0xff, byte(o)},
				Headers: []rowgroup.Header{{Key: "h", Value: nil}}, Reason: "decode", Error: "bad"})
		}
		return ls
	}
	tests := []struct {
		name     string
		send     []int64
		wantLast int64
		wantKeys []string // objects after the send
	}{
		{"first owner", []int64{5, 7}, 7, []string{"t/0/t+0+00000000000000000005.jsonl"}},
		{"same batch again", []int64{5, 7}, 7, []string{"t/0/t+0+00000000000000000005.jsonl"}},
		{"a longer batch from the same offset", []int64{5, 7, 9, 12}, 12,
			[]string{"t/0/t+0+00000000000000000005.jsonl", "t/0/t+0+00000000000000000009.jsonl"}},
		{"a shorter batch: the existing object covers more", []int64{9}, 12,
			[]string{"t/0/t+0+00000000000000000005.jsonl", "t/0/t+0+00000000000000000009.jsonl"}},
	}
	for _, tt := range tests {
		last, err := d.Send(ctx, "t", 0, mk(tt.send...))
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if last != tt.wantLast {
			t.Errorf("%s: last %d, want %d", tt.name, last, tt.wantLast)
		}
		var keys []string
		for info, err := range store.List(ctx, "") {
			if err != nil {
				t.Fatal(err)
			}
			keys = append(keys, info.Key)
		}
		if strings.Join(keys, " ") != strings.Join(tt.wantKeys, " ") {
			t.Errorf("%s: objects %v, want %v", tt.name, keys, tt.wantKeys)
		}
	}
	// Every letter is in exactly one object, with its bytes.
	seen := map[int64]int{}
	for info, err := range store.List(ctx, "") {
		if err != nil {
			t.Fatal(err)
		}
		r, _, err := store.Get(ctx, info.Key)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			var l letterLine
			if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
				t.Fatal(err)
			}
			if l.Topic != "t" || string(l.Value) != string([]byte{0xff, byte(l.Offset)}) || len(l.Headers) != 1 || l.Headers[0].Value != nil ||
				l.Reason != "decode" || !l.Timestamp.Equal(time.UnixMilli(1700000000000+l.Offset)) {
				t.Errorf("%s: line %s", info.Key, sc.Bytes())
			}
			seen[l.Offset]++
		}
		r.Close()
	}
	for _, o := range []int64{5, 7, 9, 12} {
		if seen[o] != 1 {
			t.Errorf("offset %d in %d objects", o, seen[o])
		}
	}
	// An object of another partition under the key is an error, not an adoption.
	if _, err := objstore.Put(ctx, store, "u/1/u+1+00000000000000000003.jsonl", strings.NewReader(`{"topic":"v","partition":1,"offset":3}`+"\n")); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Send(ctx, "u", 1, mk(3)); err == nil || !strings.Contains(err.Error(), "another sink") {
		t.Errorf("foreign object adopted: %v", err)
	}
}
