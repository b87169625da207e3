package keyindex

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	stdmaps "maps"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
)

func newIndex(t testing.TB, opts Options) *Index {
	t.Helper()
	if opts.Dir == "" {
		opts.Dir = t.TempDir()
	}
	x, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := x.Close(); err != nil {
			t.Error(err)
		}
	})
	return x
}

func testKey(i int) []byte {
	return AppendInt(AppendString(nil, fmt.Sprintf("user-%d", i%97)), int64(i))
}

// checkModel asserts that x holds exactly the model's keys among keys
// 0..n-1.
func checkModel(t *testing.T, x *Index, model map[int]int64, n int, when string) {
	t.Helper()
	if x.Len() != int64(len(model)) {
		t.Fatalf("%s: Len = %d, the model has %d", when, x.Len(), len(model))
	}
	for i := 0; i < n; i++ {
		off, ok, err := x.Get(testKey(i))
		if err != nil {
			t.Fatalf("%s: Get(%d): %v", when, i, err)
		}
		want, wok := model[i]
		if ok != wok || off != want {
			t.Fatalf("%s: Get(%d) = %d, %v; the model has %d, %v", when, i, off, ok, want, wok)
		}
	}
}

// TestRandomOperations drives the index with random puts, deletes,
// snapshots (committed or not) and reloads, against a map.
func TestRandomOperations(t *testing.T) {
	cases := []struct {
		name string
		opts Options
		keys int
		ops  int
	}{
		{"in memory", Options{}, 2000, 20000},
		{"spilling and merging", Options{MemoryLimit: MinMemoryLimit, MaxRuns: 1, MaxDeltas: 3}, 30000, 80000},
		{"spilling, full snapshots only", Options{MemoryLimit: MinMemoryLimit, MaxRuns: 1, MaxDeltas: -1}, 30000, 60000},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			rng := rand.New(rand.NewPCG(1, uint64(len(c.name))))
			x := newIndex(t, c.opts)
			model := map[int]int64{}
			var chain []Object          // the committed snapshots
			var committed map[int]int64 // the model when the last one was committed
			sawSpill, sawDelta, sawFull, sawMerge := false, false, false, false
			for op := 0; op < c.ops; op++ {
				k := rng.IntN(c.keys)
				switch r := rng.IntN(1000); {
				case r < 700:
					prev, had, err := x.Put(testKey(k), int64(op))
					if err != nil {
						t.Fatal(err)
					}
					want, wok := model[k]
					if had != wok || prev != want {
						t.Fatalf("op %d: Put(%d) returned %d, %v; the model has %d, %v", op, k, prev, had, want, wok)
					}
					model[k] = int64(op)
				case r < 950:
					prev, had, err := x.Delete(testKey(k))
					if err != nil {
						t.Fatal(err)
					}
					want, wok := model[k]
					if had != wok || prev != want {
						t.Fatalf("op %d: Delete(%d) returned %d, %v; the model has %d, %v", op, k, prev, had, want, wok)
					}
					delete(model, k)
				case r < 997:
					off, ok, err := x.Get(testKey(k))
					want, wok := model[k]
					if err != nil || ok != wok || off != want {
						t.Fatalf("op %d: Get(%d) = %d, %v, %v; the model has %d, %v", op, k, off, ok, err, want, wok)
					}
				default:
					var buf bytes.Buffer
					info, err := x.WriteSnapshot(ctx, &buf, Auto)
					if err != nil {
						t.Fatal(err)
					}
					if info.Bytes != int64(buf.Len()) {
						t.Fatalf("snapshot of %d bytes, the info says %d", buf.Len(), info.Bytes)
					}
					if rng.IntN(5) == 0 {
						continue // the upload or the table commit failed
					}
					if err := x.Commit(info); err != nil {
						t.Fatal(err)
					}
					if info.Kind == KindFull {
						chain, sawFull = nil, true
					} else {
						sawDelta = true
					}
					chain = append(chain, bytes.NewReader(buf.Bytes()))
					committed = maps(model)
				}
				if x.Stats().Runs > 0 {
					sawSpill = true
				}
				if x.nextRun > x.Stats().Runs+1 {
					sawMerge = true
				}
				if s := x.Stats(); s.MemoryBytes > x.opts.MemoryLimit {
					t.Fatalf("op %d: %d bytes in memory, over the limit of %d", op, s.MemoryBytes, x.opts.MemoryLimit)
				}
				if op%(c.ops/4) == c.ops/4-1 && chain != nil {
					// A new owner: load the committed chain, then go on from it.
					checkModel(t, x, model, c.keys, fmt.Sprintf("op %d, before the reload", op))
					y, err := Load(ctx, Options{Dir: t.TempDir(), MemoryLimit: c.opts.MemoryLimit, MaxRuns: c.opts.MaxRuns, MaxDeltas: c.opts.MaxDeltas}, chain...)
					if err != nil {
						t.Fatalf("op %d: loading a chain of %d: %v", op, len(chain), err)
					}
					checkModel(t, y, committed, c.keys, fmt.Sprintf("op %d, the loaded chain of %d", op, len(chain)))
					if err := x.Close(); err != nil {
						t.Fatal(err)
					}
					x, model = y, maps(committed)
					t.Cleanup(func() { y.Close() })
				}
			}
			checkModel(t, x, model, c.keys, "at the end")
			if !sawFull {
				t.Error("no full snapshot was committed")
			}
			if c.opts.MemoryLimit != 0 && (!sawSpill || !sawMerge) {
				t.Errorf("spilled: %v, merged: %v; the case is meant to do both", sawSpill, sawMerge)
			}
			if wantDelta := c.opts.MaxDeltas >= 0; sawDelta != wantDelta {
				t.Errorf("a delta snapshot committed: %v, want %v", sawDelta, wantDelta)
			}
		})
	}
}

func maps(m map[int]int64) map[int]int64 {
	c := make(map[int]int64, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

// snapshotChain writes a full snapshot of keys 0..9 and a delta, and
// returns both.
func snapshotChain(t *testing.T) (full, delta []byte, x *Index) {
	t.Helper()
	ctx := context.Background()
	x = newIndex(t, Options{})
	for i := 0; i < 10; i++ {
		x.Put(testKey(i), int64(i))
	}
	var b1, b2 bytes.Buffer
	info, err := x.WriteSnapshot(ctx, &b1, Auto)
	if err != nil || info.Kind != KindFull {
		t.Fatalf("first snapshot: %+v, %v", info, err)
	}
	if err := x.Commit(info); err != nil {
		t.Fatal(err)
	}
	x.Put(testKey(3), 30)
	x.Delete(testKey(4))
	x.Put(testKey(11), 11)
	info, err = x.WriteSnapshot(ctx, &b2, Auto)
	if err != nil || info.Kind != KindDelta || info.Entries != 3 {
		t.Fatalf("second snapshot: %+v, %v; want a delta of 3 keys", info, err)
	}
	if err := x.Commit(info); err != nil {
		t.Fatal(err)
	}
	return b1.Bytes(), b2.Bytes(), x
}

func TestSnapshotChain(t *testing.T) {
	full, delta, _ := snapshotChain(t)
	y, err := Load(context.Background(), Options{Dir: t.TempDir()}, bytes.NewReader(full), bytes.NewReader(delta))
	if err != nil {
		t.Fatal(err)
	}
	defer y.Close()
	want := map[int]int64{0: 0, 1: 1, 2: 2, 3: 30, 5: 5, 6: 6, 7: 7, 8: 8, 9: 9, 11: 11}
	checkModel(t, y, want, 20, "loaded")
}

// TestSnapshotNotCommitted: a snapshot never committed is written again
// in the next one, which is based on the last committed snapshot.
func TestSnapshotNotCommitted(t *testing.T) {
	ctx := context.Background()
	full, _, x := snapshotChain(t)
	// The delta of snapshotChain was committed; one more, lost.
	x.Put(testKey(5), 50)
	var lost, next bytes.Buffer
	li, err := x.WriteSnapshot(ctx, &lost, Auto)
	if err != nil {
		t.Fatal(err)
	}
	x.Put(testKey(6), 60)
	ni, err := x.WriteSnapshot(ctx, &next, Auto)
	if err != nil {
		t.Fatal(err)
	}
	if ni.BaseSeq != li.BaseSeq || ni.Seq != li.Seq || ni.Entries != 2 {
		t.Errorf("after a lost snapshot %+v, the next is %+v; want the same base and both changes", li, ni)
	}
	if err := x.Commit(ni); err != nil {
		t.Fatal(err)
	}
	if err := x.Commit(ni); err == nil {
		t.Error("committing a snapshot twice: no error")
	}
	if err := x.Commit(li); err == nil {
		t.Error("committing a snapshot written before the committed one: no error")
	}
	_ = full
}

// TestSnapshotCommitLagging: a writer whose table commits lag its
// snapshots commits an older one of those written since the last commit,
// then a later one; every chain a commit named loads the index as it was
// when its last snapshot was written, and the next delta is based on the
// last snapshot committed.
func TestSnapshotCommitLagging(t *testing.T) {
	ctx := context.Background()
	full, delta, x := snapshotChain(t)
	x.Put(testKey(5), 50)
	var s1, s2, s3 bytes.Buffer
	i1, err := x.WriteSnapshot(ctx, &s1, Auto)
	if err != nil {
		t.Fatal(err)
	}
	x.Put(testKey(6), 60)
	i2, err := x.WriteSnapshot(ctx, &s2, Auto)
	if err != nil {
		t.Fatal(err)
	}
	// The commit of s1 is known only now, after s2 was written.
	if err := x.Commit(i1); err != nil {
		t.Fatalf("committing an older snapshot written since the last commit: %v", err)
	}
	x.Delete(testKey(7))
	i3, err := x.WriteSnapshot(ctx, &s3, Auto)
	if err != nil {
		t.Fatal(err)
	}
	// The deltas of this small index soon add up to half its full
	// snapshot: s3 may be a full one.
	s3chain := [][]byte{s3.Bytes()}
	if i3.Kind == KindDelta {
		if i3.BaseSeq != i1.Seq || i3.BaseID != i1.ID || i3.Entries != 2 {
			t.Errorf("after committing %+v, the next snapshot is %+v; want it based on it, with keys 6 and 7", i1, i3)
		}
		s3chain = [][]byte{full, delta, s1.Bytes(), s3.Bytes()}
	}
	// s2, based on the snapshot before s1, can still be committed.
	if err := x.Commit(i2); err != nil {
		t.Fatalf("committing a snapshot written after the committed one: %v", err)
	}
	if err := x.Commit(i1); err == nil {
		t.Error("committing a snapshot written before the committed one: no error")
	}
	if err := x.Commit(i3); err != nil {
		t.Fatal(err)
	}
	base := map[int]int64{0: 0, 1: 1, 2: 2, 3: 30, 5: 50, 6: 6, 7: 7, 8: 8, 9: 9, 11: 11}
	for _, c := range []struct {
		name  string
		chain [][]byte
		want  map[int]int64
	}{
		{"s1", [][]byte{full, delta, s1.Bytes()}, base},
		{"s2", [][]byte{full, delta, s2.Bytes()}, with(base, 6, 60)},
		{"s3", s3chain, without(with(base, 6, 60), 7)},
	} {
		var objs []Object
		for _, b := range c.chain {
			objs = append(objs, bytes.NewReader(b))
		}
		y, err := Load(ctx, Options{Dir: t.TempDir()}, objs...)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		checkModel(t, y, c.want, 20, c.name)
		y.Close()
	}
}

func with(m map[int]int64, k int, v int64) map[int]int64 {
	out := stdmaps.Clone(m)
	out[k] = v
	return out
}

func without(m map[int]int64, k int) map[int]int64 {
	out := stdmaps.Clone(m)
	delete(out, k)
	return out
}

func TestLoadRejectsBadChains(t *testing.T) {
	full, delta, _ := snapshotChain(t)
	other, _, _ := snapshotChain(t)
	otherFull := append([]byte(nil), other...)
	// A full snapshot of different content: another id.
	{
		x := newIndex(t, Options{})
		x.Put(testKey(99), 1)
		var b bytes.Buffer
		if _, err := x.WriteSnapshot(context.Background(), &b, Full); err != nil {
			t.Fatal(err)
		}
		otherFull = b.Bytes()
	}
	cases := []struct {
		name  string
		chain [][]byte
		want  string
	}{
		{"nothing", nil, "no snapshot"},
		{"a delta first", [][]byte{delta}, "not a full one"},
		{"two full ones", [][]byte{full, full}, "not a delta"},
		{"a delta of another base", [][]byte{otherFull, delta}, "is based on"},
		{"a delta twice", [][]byte{full, delta, delta}, "is based on"},
		{"empty bytes", [][]byte{{}}, "fewer than a header"},
		{"not a snapshot", [][]byte{bytes.Repeat([]byte("x"), 100)}, "not a key index file"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var objs []Object
			for _, b := range c.chain {
				objs = append(objs, bytes.NewReader(b))
			}
			y, err := Load(context.Background(), Options{Dir: t.TempDir()}, objs...)
			if err == nil {
				y.Close()
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q does not say %q", err, c.want)
			}
			if len(c.chain) > 0 && !errors.Is(err, ErrCorrupt) {
				t.Errorf("error %q is not ErrCorrupt", err)
			}
		})
	}
}

// TestLoadRejectsCorruption: every byte of a snapshot is checked, so any
// byte changed, and any cut, is an error, never a different index.
func TestLoadRejectsCorruption(t *testing.T) {
	full, delta, _ := snapshotChain(t)
	for _, c := range []struct {
		name string
		b    []byte
	}{{"full", full}, {"delta", delta}} {
		t.Run(c.name, func(t *testing.T) {
			chain := func(b []byte) []Object {
				if c.name == "full" {
					return []Object{bytes.NewReader(b)}
				}
				return []Object{bytes.NewReader(full), bytes.NewReader(b)}
			}
			dir := t.TempDir()
			for i := range c.b {
				for _, flip := range []byte{0x01, 0x80} {
					b := bytes.Clone(c.b)
					b[i] ^= flip
					if y, err := Load(context.Background(), Options{Dir: dir}, chain(b)...); err == nil {
						y.Close()
						t.Fatalf("byte %d of %d xor %02x: loaded", i, len(b), flip)
					} else if !errors.Is(err, ErrCorrupt) {
						t.Fatalf("byte %d xor %02x: %v, not ErrCorrupt", i, flip, err)
					}
				}
			}
			for n := 0; n < len(c.b); n++ {
				if y, err := Load(context.Background(), Options{Dir: dir}, chain(c.b[:n])...); err == nil {
					y.Close()
					t.Fatalf("cut to %d of %d bytes: loaded", n, len(c.b))
				}
			}
		})
	}
}

func TestSpillDirectoryRemoved(t *testing.T) {
	dir := t.TempDir()
	x, err := New(Options{Dir: dir, MemoryLimit: MinMemoryLimit})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; x.Stats().Runs == 0; i++ {
		if _, _, err := x.Put(testKey(i), int64(i)); err != nil {
			t.Fatal(err)
		}
	}
	if s := x.Stats(); s.DiskBytes == 0 {
		t.Errorf("a run spilled and %+v", s)
	}
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("after Close, %d entries left in the spill directory", len(ents))
	}
	if _, _, err := x.Get(testKey(1)); err == nil {
		t.Error("Get after Close: no error")
	}
}

func TestBadArguments(t *testing.T) {
	x := newIndex(t, Options{})
	cases := []struct {
		name string
		err  func() error
	}{
		{"an empty key", func() error { _, _, err := x.Put(nil, 1); return err }},
		{"a key too long", func() error { _, _, err := x.Put(make([]byte, MaxKeyLen+1), 1); return err }},
		{"a negative offset", func() error { _, _, err := x.Put([]byte("k"), -1); return err }},
		{"a memory limit too small", func() error { _, err := New(Options{Dir: t.TempDir(), MemoryLimit: 1000}); return err }},
		{"deleting an empty key", func() error { _, _, err := x.Delete(nil); return err }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.err() == nil {
				t.Error("no error")
			}
		})
	}
}

// TestLoadAsRun: a full snapshot larger than the memory limit is loaded as
// a run, checked as thoroughly as one loaded into memory.
func TestLoadAsRun(t *testing.T) {
	ctx := context.Background()
	x := newIndex(t, Options{})
	model := map[int]int64{}
	for i := 0; i < 20000; i++ {
		x.Put(testKey(i), int64(i))
		model[i] = int64(i)
	}
	var b bytes.Buffer
	if _, err := x.WriteSnapshot(ctx, &b, Full); err != nil {
		t.Fatal(err)
	}
	opts := Options{Dir: t.TempDir(), MemoryLimit: MinMemoryLimit}
	y, err := Load(ctx, opts, bytes.NewReader(b.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	defer y.Close()
	if s := y.Stats(); s.Runs != 1 || s.DiskBytes != int64(b.Len()) {
		t.Errorf("loaded as %+v, want one run of the snapshot's %d bytes", s, b.Len())
	}
	checkModel(t, y, model, 20001, "loaded as a run")
	for _, at := range []int{headerLen + 100, b.Len() / 2, b.Len() - trailerLen - 10} {
		bad := bytes.Clone(b.Bytes())
		bad[at] ^= 0x10
		if z, err := Load(ctx, opts, bytes.NewReader(bad)); err == nil {
			z.Close()
			t.Errorf("byte %d changed: loaded", at)
		} else if !errors.Is(err, ErrCorrupt) {
			t.Errorf("byte %d changed: %v, not ErrCorrupt", at, err)
		}
	}
	if ents, _ := os.ReadDir(opts.Dir); len(ents) != 1 {
		t.Errorf("%d entries in the spill directory after failed loads, want the one of the loaded index", len(ents))
	}
}

// TestSetMemoryLimit: a smaller share spills at the next changes; one
// under the least is refused.
func TestSetMemoryLimit(t *testing.T) {
	x := newIndex(t, Options{MemoryLimit: 64 << 20})
	if err := x.SetMemoryLimit(MinMemoryLimit - 1); err == nil {
		t.Error("a limit under MinMemoryLimit: no error")
	}
	for i := 0; i < 20000; i++ {
		x.Put(testKey(i), int64(i))
	}
	if st := x.Stats(); st.Runs != 0 {
		t.Fatalf("spilled under a 64 MiB limit: %+v", st)
	}
	if err := x.SetMemoryLimit(MinMemoryLimit); err != nil {
		t.Fatal(err)
	}
	for i := 20000; i < 40000; i++ {
		x.Put(testKey(i), int64(i))
	}
	if st := x.Stats(); st.Runs == 0 || st.MemoryBytes > 2*MinMemoryLimit {
		t.Errorf("after a 1 MiB limit: %+v; want runs spilled and memory near the limit", st)
	}
	for _, i := range []int{0, 19999, 39999} {
		if off, ok, err := x.Get(testKey(i)); err != nil || !ok || off != int64(i) {
			t.Errorf("key %d: %d, %v, %v", i, off, ok, err)
		}
	}
}
