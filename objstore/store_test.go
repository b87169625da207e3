package objstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
	"time"
)

// testPartSize keeps multipart tests small: S3's minimum part size.
const testPartSize = MinPartSize

// backend is one Store implementation under the shared behaviour tests.
type backend struct {
	name string
	// open returns a fresh, empty store.
	open func(t *testing.T, opts ...Option) Store
	// pending lists unfinished uploads under prefix: multipart uploads on
	// S3, temporary files in a directory.
	pending func(t *testing.T, s Store, prefix string) []string
	// startUpload leaves an unfinished upload for key, as a crashed writer
	// would.
	startUpload func(t *testing.T, s Store, key string)
	// invisibleUploads is set for a store whose unfinished uploads leave
	// nothing that a listing of the bucket shows, and so nothing for
	// AbortStaleUploads to clean up (GCS resumable upload sessions).
	// pending then always returns nothing.
	invisibleUploads bool
}

// testStore runs the behaviour every Store must have.
func testStore(t *testing.T, b backend) {
	tests := []struct {
		name string
		run  func(t *testing.T, b backend, s Store)
	}{
		{"CreateGetHead", testCreateGetHead},
		{"StreamSizes", testStreamSizes},
		{"CommitExists", testCommitExists},
		{"CreateRace", testCreateRace},
		{"Abort", testAbort},
		{"AbortAfterCommit", testAbortAfterCommit},
		{"ReaderErrorLeavesNothing", testReaderError},
		{"CancelLeavesNothing", testCancel},
		{"RangedReads", testRangedReads},
		{"NotFound", testNotFound},
		{"ListAndDelete", testListAndDelete},
		{"InvalidKeys", testInvalidKeys},
		{"AbortStaleUploads", testAbortStaleUploads},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := b.open(t)
			t.Cleanup(func() { s.Close() })
			tt.run(t, b, s)
		})
	}
}

// payload returns n deterministic pseudo-random bytes.
func payload(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	p := make([]byte, n)
	for i := range p {
		p[i] = byte(r.Uint32())
	}
	return p
}

func readAll(t testing.TB, s Store, key string) ([]byte, Info) {
	t.Helper()
	rc, info, err := s.Get(context.Background(), key)
	if err != nil {
		t.Fatalf("Get(%q): %v", key, err)
	}
	defer rc.Close()
	data, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("Get(%q): reading: %v", key, err)
	}
	return data, info
}

// create stores data under key with Put.
func create(t testing.TB, s Store, key string, data []byte) Info {
	t.Helper()
	info, err := Put(context.Background(), s, key, bytes.NewReader(data))
	if err != nil {
		t.Fatalf("Put(%q, %d bytes): %v", key, len(data), err)
	}
	return info
}

// writeChunks writes data to up in chunks whose sizes cycle through
// chunks, checking Written as it goes.
func writeChunks(t testing.TB, up Upload, data []byte, chunks ...int) {
	t.Helper()
	for i := 0; len(data) > 0; i++ {
		before := up.Written()
		n := min(chunks[i%len(chunks)], len(data))
		m, err := up.Write(data[:n])
		if err != nil || m != n {
			t.Fatalf("Write(%d bytes) after %d: %d, %v", n, before, m, err)
		}
		if got := up.Written(); got != before+int64(n) {
			t.Fatalf("Written = %d after writing %d bytes to %d", got, n, before)
		}
		data = data[n:]
	}
}

// stream writes data into a new object in chunks and commits it.
func stream(t testing.TB, s Store, key string, data []byte, chunks ...int) (Info, error) {
	t.Helper()
	up, err := s.Create(context.Background(), key)
	if err != nil {
		t.Fatalf("Create(%q): %v", key, err)
	}
	defer up.Abort(context.Background())
	writeChunks(t, up, data, chunks...)
	return up.Commit(context.Background())
}

func testCreateGetHead(t *testing.T, _ backend, s Store) {
	ctx := context.Background()
	data := []byte("PAR1 not really PAR1")
	info, err := Put(ctx, s, "topic/p=0/00000000000000000042.parquet", bytes.NewReader(data),
		ContentType("application/vnd.apache.parquet"), Metadata("first-offset", "42"))
	if err != nil {
		t.Fatal(err)
	}
	if info.Key != "topic/p=0/00000000000000000042.parquet" || info.Size != int64(len(data)) || info.ETag == "" {
		t.Errorf("Put returned %+v", info)
	}
	got, ginfo := readAll(t, s, info.Key)
	if !bytes.Equal(got, data) {
		t.Errorf("Get = %q, want %q", got, data)
	}
	hinfo, err := s.Head(ctx, info.Key)
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range []Info{ginfo, hinfo} {
		if i.Key != info.Key || i.Size != info.Size || i.ETag != info.ETag || i.Modified.IsZero() {
			t.Errorf("Get/Head info = %+v, want key, size and ETag of %+v and a time", i, info)
		}
		if d := time.Since(i.Modified); d < -time.Minute || d > time.Minute {
			t.Errorf("Modified = %v, not about now", i.Modified)
		}
	}
}

// testStreamSizes covers the single-PUT and multipart paths and their
// boundary, an object of exactly one part being still a single PUT, with
// writes that are whole, tiny, and straddle part boundaries.
func testStreamSizes(t *testing.T, b backend, s Store) {
	sizes := []int{0, 1, testPartSize - 1, testPartSize, testPartSize + 1, 3*testPartSize + 7}
	patterns := []struct {
		name   string
		chunks []int
	}{
		{"whole", []int{math.MaxInt}},
		{"mixed", []int{1, 7919, 1 << 16, 1<<20 + 1, 3}},
		{"put", nil}, // Put from a reader that returns short reads
	}
	for i, n := range sizes {
		for _, p := range patterns {
			data := payload(n, uint64(i))
			key := fmt.Sprintf("sizes/%d-%s", n, p.name)
			var info Info
			var err error
			if p.chunks == nil {
				info, err = Put(context.Background(), s, key, iotest.HalfReader(bytes.NewReader(data)))
			} else {
				info, err = stream(t, s, key, data, p.chunks...)
			}
			if err != nil {
				t.Fatalf("%s: %v", key, err)
			}
			if info.Key != key || info.Size != int64(n) || info.ETag == "" {
				t.Errorf("%s: Info = %+v", key, info)
			}
			got, ginfo := readAll(t, s, key)
			if !bytes.Equal(got, data) {
				t.Errorf("%s: read back %d bytes that differ", key, len(got))
			}
			if ginfo.ETag != info.ETag {
				t.Errorf("%s: Get's ETag %q, Commit's %q", key, ginfo.ETag, info.ETag)
			}
			if b.name == "s3" {
				// S3 marks multipart objects' ETags with their part count.
				wantParts := ""
				if n > testPartSize {
					wantParts = fmt.Sprintf("-%d", (n+testPartSize-1)/testPartSize)
				}
				if dash := strings.LastIndexByte(info.ETag, '-'); (dash >= 0) != (wantParts != "") ||
					(dash >= 0 && info.ETag[dash:] != wantParts) {
					t.Errorf("%s: ETag %q, want a multipart ETag ending in %q (empty: single PUT)", key, info.ETag, wantParts)
				}
			}
		}
	}
	if p := b.pending(t, s, ""); len(p) != 0 {
		t.Errorf("unfinished uploads left: %q", p)
	}
}

// testCommitExists: a Commit over an existing key fails with ErrExists,
// leaves the existing object as it was and nothing of its own, single PUT
// or multipart (If-None-Match on CompleteMultipartUpload).
func testCommitExists(t *testing.T, b backend, s Store) {
	ctx := context.Background()
	for i, n := range []int{5, testPartSize, testPartSize + 1, 3*testPartSize + 7} {
		key := fmt.Sprintf("exists/%d", n)
		first := payload(10, uint64(i))
		create(t, s, key, first)
		up, err := s.Create(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		writeChunks(t, up, payload(n, 100+uint64(i)), 1<<20)
		if _, err := up.Commit(ctx); !errors.Is(err, ErrExists) {
			t.Fatalf("Commit of %d bytes over an existing key: err = %v, want ErrExists", n, err)
		}
		if err := up.Abort(ctx); err != nil {
			t.Errorf("Abort after a refused Commit: %v", err)
		}
		if _, err := up.Commit(ctx); err == nil || errors.Is(err, ErrExists) {
			t.Errorf("second Commit after a refused one: err = %v, want an error saying the upload is over", err)
		}
		if got, _ := readAll(t, s, key); !bytes.Equal(got, first) {
			t.Errorf("after a refused Commit of %d bytes, object has %d bytes, want the first %d", n, len(got), len(first))
		}
		if p := b.pending(t, s, ""); len(p) != 0 {
			t.Errorf("refused Commit of %d bytes left uploads: %q", n, p)
		}
	}
}

// testCreateRace has several writers create one key at once: exactly one
// wins, and the object is the winner's.
func testCreateRace(t *testing.T, b backend, s Store) {
	const writers = 6
	for _, size := range []int{100, testPartSize + 100} {
		key := fmt.Sprintf("race/%d", size)
		var wg sync.WaitGroup
		errs := make([]error, writers)
		for w := range writers {
			wg.Go(func() {
				_, errs[w] = Put(context.Background(), s, key, bytes.NewReader(payload(size, uint64(w))))
			})
		}
		wg.Wait()
		winner := -1
		for w, err := range errs {
			switch {
			case err == nil && winner >= 0:
				t.Errorf("size %d: writers %d and %d both created the object", size, winner, w)
			case err == nil:
				winner = w
			case !errors.Is(err, ErrExists):
				t.Errorf("size %d: writer %d: %v, want ErrExists or success", size, w, err)
			}
		}
		if winner < 0 {
			t.Fatalf("size %d: no writer won", size)
		}
		if got, _ := readAll(t, s, key); !bytes.Equal(got, payload(size, uint64(winner))) {
			t.Errorf("size %d: object is not the winner's (writer %d)", size, winner)
		}
	}
	if p := b.pending(t, s, ""); len(p) != 0 {
		t.Errorf("losing writers left uploads: %q", p)
	}
}

// testAbort: an upload aborted at any point, with parts in flight or not,
// leaves nothing, refuses further use, and frees its key.
func testAbort(t *testing.T, b backend, s Store) {
	ctx := context.Background()
	for _, n := range []int{0, 10, testPartSize, testPartSize + 10, 3*testPartSize + 10} {
		key := fmt.Sprintf("aborted/%d", n)
		up, err := s.Create(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		writeChunks(t, up, payload(n, 6), 1<<20)
		if err := up.Abort(ctx); err != nil {
			t.Fatalf("Abort after %d bytes: %v", n, err)
		}
		if err := up.Abort(ctx); err != nil {
			t.Errorf("second Abort after %d bytes: %v", n, err)
		}
		if _, err := up.Write([]byte("more")); err == nil {
			t.Errorf("Write after Abort succeeded")
		}
		if _, err := up.Commit(ctx); err == nil || errors.Is(err, ErrExists) {
			t.Errorf("Commit after Abort: err = %v, want an error saying the upload is over", err)
		}
		if _, err := s.Head(ctx, key); !errors.Is(err, ErrNotExist) {
			t.Errorf("after Abort of %d bytes, Head: err = %v, want ErrNotExist", n, err)
		}
		if p := b.pending(t, s, ""); len(p) != 0 {
			t.Errorf("Abort of %d bytes left uploads: %q", n, p)
		}
		create(t, s, key, []byte("the key is free"))
	}
}

func testAbortAfterCommit(t *testing.T, b backend, s Store) {
	ctx := context.Background()
	for _, n := range []int{10, testPartSize + 10} {
		key := fmt.Sprintf("done/%d", n)
		data := payload(n, 7)
		up, err := s.Create(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		writeChunks(t, up, data, 1<<20)
		info, err := up.Commit(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := up.Abort(ctx); err != nil {
			t.Errorf("Abort after Commit: %v", err)
		}
		if _, err := up.Write([]byte("more")); err == nil {
			t.Errorf("Write after Commit succeeded")
		}
		if _, err := up.Commit(ctx); err == nil {
			t.Errorf("second Commit succeeded")
		}
		got, ginfo := readAll(t, s, key)
		if !bytes.Equal(got, data) || ginfo.ETag != info.ETag {
			t.Errorf("after Abort following Commit, object has %d bytes, ETag %q; want %d, %q", len(got), ginfo.ETag, n, info.ETag)
		}
	}
	if p := b.pending(t, s, ""); len(p) != 0 {
		t.Errorf("uploads left: %q", p)
	}
}

var errBoom = errors.New("boom")

func testReaderError(t *testing.T, b backend, s Store) {
	for _, n := range []int{10, testPartSize + 10, 2*testPartSize + 10} {
		key := fmt.Sprintf("broken/%d", n)
		r := io.MultiReader(bytes.NewReader(payload(n, 3)), iotest.ErrReader(errBoom))
		_, err := Put(context.Background(), s, key, r)
		if !errors.Is(err, errBoom) {
			t.Errorf("Put with a reader failing after %d bytes: err = %v, want errBoom", n, err)
		}
		if _, err := s.Head(context.Background(), key); !errors.Is(err, ErrNotExist) {
			t.Errorf("after failed Put of %d bytes, Head: err = %v, want ErrNotExist", n, err)
		}
	}
	if p := b.pending(t, s, ""); len(p) != 0 {
		t.Errorf("failed Puts left uploads: %q", p)
	}
	// A reader whose error wraps io.EOF is a failure, not a clean end.
	wrapped := fmt.Errorf("decoder: %w", io.EOF)
	r := io.MultiReader(bytes.NewReader(payload(testPartSize+10, 3)), iotest.ErrReader(wrapped))
	if _, err := Put(context.Background(), s, "broken/eof", r); !errors.Is(err, wrapped) {
		t.Errorf("Put with a reader failing with a wrapped EOF: err = %v", err)
	}
	if _, err := s.Head(context.Background(), "broken/eof"); !errors.Is(err, ErrNotExist) {
		t.Errorf("after a wrapped-EOF failure, Head: err = %v, want ErrNotExist", err)
	}
}

// cancelReader cancels its context once more than after bytes were read.
type cancelReader struct {
	r      io.Reader
	after  int
	read   int
	cancel context.CancelFunc
}

func (c *cancelReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.read += n
	if c.read > c.after {
		c.cancel()
	}
	return n, err
}

// testCancel: the end of the Create context fails the upload wherever it
// is, and the end of the Commit context fails the Commit; nothing is left.
func testCancel(t *testing.T, b backend, s Store) {
	for _, after := range []int{0, testPartSize + 1} {
		ctx, cancel := context.WithCancel(context.Background())
		r := &cancelReader{r: bytes.NewReader(payload(3*testPartSize, 4)), after: after, cancel: cancel}
		key := fmt.Sprintf("cancelled/put-%d", after)
		_, err := Put(ctx, s, key, r)
		cancel()
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Put cancelled after %d bytes: err = %v, want context.Canceled", after, err)
		}
		if _, err := s.Head(context.Background(), key); !errors.Is(err, ErrNotExist) {
			t.Errorf("after cancelled Put, Head: err = %v, want ErrNotExist", err)
		}
	}

	// Cancelled between writes, with parts in flight or not.
	for _, n := range []int{10, testPartSize + 10, 2*testPartSize + 10} {
		ctx, cancel := context.WithCancel(context.Background())
		key := fmt.Sprintf("cancelled/write-%d", n)
		up, err := s.Create(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		writeChunks(t, up, payload(n, 5), 1<<20)
		cancel()
		if _, err := up.Write([]byte("x")); !errors.Is(err, context.Canceled) {
			t.Errorf("Write after cancel (%d bytes written): err = %v, want context.Canceled", n, err)
		}
		if _, err := up.Commit(context.Background()); !errors.Is(err, context.Canceled) {
			t.Errorf("Commit after cancel (%d bytes written): err = %v, want context.Canceled", n, err)
		}
		if err := up.Abort(context.Background()); err != nil {
			t.Errorf("Abort after cancel: %v", err)
		}
		if _, err := s.Head(context.Background(), key); !errors.Is(err, ErrNotExist) {
			t.Errorf("after cancelled upload, Head: err = %v, want ErrNotExist", err)
		}
	}

	// A Commit whose own context has ended.
	for _, n := range []int{10, 2*testPartSize + 10} {
		key := fmt.Sprintf("cancelled/commit-%d", n)
		up, err := s.Create(context.Background(), key)
		if err != nil {
			t.Fatal(err)
		}
		writeChunks(t, up, payload(n, 5), 1<<20)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := up.Commit(ctx); !errors.Is(err, context.Canceled) {
			t.Errorf("Commit with a cancelled context (%d bytes): err = %v, want context.Canceled", n, err)
		}
		// The clean-up ignores the cancellation of its context.
		if err := up.Abort(ctx); err != nil {
			t.Errorf("Abort with a cancelled context: %v", err)
		}
		if _, err := s.Head(context.Background(), key); !errors.Is(err, ErrNotExist) {
			t.Errorf("after a cancelled Commit, Head: err = %v, want ErrNotExist", err)
		}
	}

	// A Create whose context has ended already.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Create(ctx, "cancelled/create"); !errors.Is(err, context.Canceled) {
		t.Errorf("Create with a cancelled context: err = %v, want context.Canceled", err)
	}
	if p := b.pending(t, s, ""); len(p) != 0 {
		t.Errorf("cancelled uploads left: %q", p)
	}
}

func testRangedReads(t *testing.T, _ backend, s Store) {
	data := payload(testPartSize+1000, 5) // multipart: ranges cross the part boundary
	create(t, s, "ranged", data)
	r, err := s.NewReaderAt(context.Background(), "ranged")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	size := int64(len(data))
	if r.Size() != size {
		t.Fatalf("Size = %d, want %d", r.Size(), size)
	}
	tests := []struct {
		off     int64
		n       int
		wantN   int
		wantEOF bool
	}{
		{0, 4, 4, false},
		{0, 0, 0, false},
		{size - 8, 8, 8, false}, // a footer read
		{testPartSize - 10, 20, 20, false},
		{size - 5, 10, 5, true},
		{size, 1, 0, true},
		{size + 100, 1, 0, true},
		{0, int(size), int(size), false},
		{0, int(size) + 1, int(size), true},
	}
	for _, tt := range tests {
		p := make([]byte, tt.n)
		n, err := r.ReadAt(p, tt.off)
		if n != tt.wantN || (err == io.EOF) != tt.wantEOF || (err != nil && err != io.EOF) {
			t.Errorf("ReadAt(%d bytes at %d) = %d, %v; want %d, EOF %v", tt.n, tt.off, n, err, tt.wantN, tt.wantEOF)
			continue
		}
		if end := tt.off + int64(n); n > 0 && !bytes.Equal(p[:n], data[tt.off:end]) {
			t.Errorf("ReadAt(%d bytes at %d): wrong bytes", tt.n, tt.off)
		}
	}
	if _, err := r.ReadAt(make([]byte, 1), -1); err == nil || err == io.EOF {
		t.Errorf("ReadAt at -1: err = %v, want an error", err)
	}

	// Concurrent ReadAt calls are allowed.
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			off := int64(i) * 1000
			p := make([]byte, 100)
			if n, err := r.ReadAt(p, off); err != nil || !bytes.Equal(p[:n], data[off:off+100]) {
				t.Errorf("concurrent ReadAt at %d: %d, %v", off, n, err)
			}
		})
	}
	wg.Wait()
}

func testNotFound(t *testing.T, _ backend, s Store) {
	ctx := context.Background()
	create(t, s, "dir/present", []byte("x"))
	for _, key := range []string{"absent", "dir/absent", "dir", "absent/deeper", "dir/present/deeper"} {
		if _, err := s.Head(ctx, key); !errors.Is(err, ErrNotExist) {
			t.Errorf("Head(%q): err = %v, want ErrNotExist", key, err)
		}
		if _, _, err := s.Get(ctx, key); !errors.Is(err, ErrNotExist) {
			t.Errorf("Get(%q): err = %v, want ErrNotExist", key, err)
		}
		if _, err := s.NewReaderAt(ctx, key); !errors.Is(err, ErrNotExist) {
			t.Errorf("NewReaderAt(%q): err = %v, want ErrNotExist", key, err)
		}
		if err := s.Delete(ctx, key); err != nil {
			t.Errorf("Delete(%q) of a missing key: %v", key, err)
		}
	}
	if _, err := s.Head(ctx, "dir/present"); err != nil {
		t.Errorf("Deletes of missing keys removed a neighbour: %v", err)
	}
}

func listKeys(t *testing.T, s Store, prefix string) []string {
	t.Helper()
	var keys []string
	for info, err := range s.List(context.Background(), prefix) {
		if err != nil {
			t.Fatalf("List(%q): %v", prefix, err)
		}
		keys = append(keys, info.Key)
	}
	return keys
}

func testListAndDelete(t *testing.T, _ backend, s Store) {
	keys := []string{"a/2", "a.b", "a/x/y", "a/1", "b", "ab/c", "a/x.z"}
	for i, k := range keys {
		create(t, s, k, payload(i+1, uint64(i)))
	}
	tests := []struct {
		prefix string
		want   []string
	}{
		{"", []string{"a.b", "a/1", "a/2", "a/x.z", "a/x/y", "ab/c", "b"}},
		{"a", []string{"a.b", "a/1", "a/2", "a/x.z", "a/x/y", "ab/c"}},
		{"a/", []string{"a/1", "a/2", "a/x.z", "a/x/y"}},
		{"a/x", []string{"a/x.z", "a/x/y"}},
		{"a/x/", []string{"a/x/y"}},
		{"a/x/y", []string{"a/x/y"}},
		{"a/x/y/", nil},
		{"zz", nil},
		{"b/", nil},
	}
	for _, tt := range tests {
		if got := listKeys(t, s, tt.prefix); !slices.Equal(got, tt.want) {
			t.Errorf("List(%q) = %q, want %q", tt.prefix, got, tt.want)
		}
	}
	for info, err := range s.List(context.Background(), "a/1") {
		if err != nil || info.Size != 4 || info.ETag == "" || info.Modified.IsZero() {
			t.Errorf("List info = %+v, %v; want size 4, an ETag and a time", info, err)
		}
	}
	// Breaking out of the loop early is fine.
	for range s.List(context.Background(), "") {
		break
	}

	ctx := context.Background()
	for _, k := range []string{"a/2", "a/x/y"} {
		if err := s.Delete(ctx, k); err != nil {
			t.Fatalf("Delete(%q): %v", k, err)
		}
		if _, err := s.Head(ctx, k); !errors.Is(err, ErrNotExist) {
			t.Errorf("after Delete(%q), Head: err = %v, want ErrNotExist", k, err)
		}
	}
	if got, want := listKeys(t, s, "a/"), []string{"a/1", "a/x.z"}; !slices.Equal(got, want) {
		t.Errorf("after deletes, List(a/) = %q, want %q", got, want)
	}
	// A deleted key can be created again.
	create(t, s, "a/2", []byte("again"))
	if got, _ := readAll(t, s, "a/2"); string(got) != "again" {
		t.Errorf("re-created object = %q", got)
	}
}

func testInvalidKeys(t *testing.T, _ backend, s Store) {
	ctx := context.Background()
	for _, key := range []string{"", "/abs", "a/", "a//b", "../escape", "a/../../escape", "./a", "a/.", "nul\x00", tempPrefix + "x", "a/" + tempPrefix} {
		up, err := s.Create(ctx, key)
		if err == nil {
			up.Abort(ctx)
			t.Errorf("Create(%q) succeeded, want an invalid key error", key)
		}
		if _, err := Put(ctx, s, key, strings.NewReader("x")); err == nil || errors.Is(err, ErrExists) {
			t.Errorf("Put(%q): err = %v, want an invalid key error", key, err)
		}
		if _, err := s.Head(ctx, key); err == nil {
			t.Errorf("Head(%q) succeeded", key)
		}
	}
	if got := listKeys(t, s, ""); len(got) != 0 {
		t.Errorf("invalid Creates left objects: %q", got)
	}
}

func testAbortStaleUploads(t *testing.T, b backend, s Store) {
	ctx := context.Background()
	b.startUpload(t, s, "mine/p=1/00000000000000000007.parquet")
	b.startUpload(t, s, "other/x")
	create(t, s, "mine/done", []byte("done"))
	if b.invisibleUploads {
		// The unfinished uploads hold no key and show nowhere: there is
		// nothing to abort, and their keys are free.
		if n, err := s.AbortStaleUploads(ctx, "mine/", 0); err != nil || n != 0 {
			t.Errorf("AbortStaleUploads(0) = %d, %v; want 0 aborted", n, err)
		}
		if got := listKeys(t, s, ""); !slices.Equal(got, []string{"mine/done"}) {
			t.Errorf("objects with unfinished uploads = %q, want only mine/done", got)
		}
		create(t, s, "mine/p=1/00000000000000000007.parquet", []byte("x"))
		create(t, s, "other/x", []byte("x"))
		return
	}

	// Young uploads stay.
	if n, err := s.AbortStaleUploads(ctx, "mine/", time.Hour); err != nil || n != 0 {
		t.Errorf("AbortStaleUploads(1h) = %d, %v; want 0 aborted", n, err)
	}
	if got := b.pending(t, s, "mine/"); len(got) != 1 {
		t.Fatalf("pending uploads under mine/ = %q, want 1", got)
	}
	time.Sleep(10 * time.Millisecond)
	if n, err := s.AbortStaleUploads(ctx, "mine/", 0); err != nil || n != 1 {
		t.Errorf("AbortStaleUploads(0) = %d, %v; want 1 aborted", n, err)
	}
	if got := b.pending(t, s, "mine/"); len(got) != 0 {
		t.Errorf("after abort, pending under mine/ = %q", got)
	}
	if got := b.pending(t, s, "other/"); len(got) != 1 {
		t.Errorf("upload outside the prefix was touched: pending under other/ = %q", got)
	}
	if got := listKeys(t, s, ""); !slices.Equal(got, []string{"mine/done"}) {
		t.Errorf("objects after abort = %q, want only mine/done", got)
	}
	// The key of an aborted upload is free.
	create(t, s, "mine/p=1/00000000000000000007.parquet", []byte("x"))
}
