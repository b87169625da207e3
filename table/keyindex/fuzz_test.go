package keyindex

import (
	"bytes"
	"context"
	"errors"
	"testing"
)

// FuzzLoad: Load never panics on untrusted bytes, and what it accepts is
// a consistent index. Seeds: the snapshots of snapshotChain (in code) and
// those under testdata/fuzz/FuzzLoad.
func FuzzLoad(f *testing.F) {
	full, delta := seedSnapshots(f)
	f.Add(full, []byte(nil))
	f.Add(full, delta)
	f.Add(delta, []byte(nil))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, first, second []byte) {
		chain := []Object{bytes.NewReader(first)}
		if len(second) > 0 {
			chain = append(chain, bytes.NewReader(second))
		}
		x, err := Load(context.Background(), Options{Dir: dir}, chain...)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("an error that is not ErrCorrupt: %v", err)
			}
			return
		}
		defer x.Close()
		// Write it again, load that, and find the same keys.
		var b bytes.Buffer
		if _, err := x.WriteSnapshot(context.Background(), &b, Full); err != nil {
			t.Fatal(err)
		}
		y, err := Load(context.Background(), Options{Dir: dir}, bytes.NewReader(b.Bytes()))
		if err != nil {
			t.Fatalf("a loaded index written again does not load: %v", err)
		}
		defer y.Close()
		if x.Len() != y.Len() {
			t.Fatalf("%d keys, %d after writing and loading again", x.Len(), y.Len())
		}
	})
}

// seedSnapshots writes a full snapshot and a delta after it.
func seedSnapshots(tb testing.TB) (full, delta []byte) {
	ctx := context.Background()
	x, err := New(Options{Dir: tb.TempDir()})
	if err != nil {
		tb.Fatal(err)
	}
	defer x.Close()
	for i := 0; i < 300; i++ { // more than one block
		x.Put(testKey(i), int64(i))
	}
	var b1, b2 bytes.Buffer
	info, err := x.WriteSnapshot(ctx, &b1, Auto)
	if err != nil {
		tb.Fatal(err)
	}
	if err := x.Commit(info); err != nil {
		tb.Fatal(err)
	}
	x.Delete(testKey(1))
	x.Put(testKey(2), 1000)
	if _, err := x.WriteSnapshot(ctx, &b2, Auto); err != nil {
		tb.Fatal(err)
	}
	return b1.Bytes(), b2.Bytes()
}
