package objstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
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
	open func(t *testing.T) Store
	// pending lists unfinished uploads under prefix: multipart uploads on
	// S3, temporary files in a directory.
	pending func(t *testing.T, s Store, prefix string) []string
	// startUpload leaves an unfinished upload for key, as a crashed writer
	// would.
	startUpload func(t *testing.T, s Store, key string)
}

// testStore runs the behaviour every Store must have.
func testStore(t *testing.T, b backend) {
	tests := []struct {
		name string
		run  func(t *testing.T, b backend, s Store)
	}{
		{"CreateGetHead", testCreateGetHead},
		{"CreateSizes", testCreateSizes},
		{"CreateExists", testCreateExists},
		{"CreateExistsMultipart", testCreateExistsMultipart},
		{"CreateRace", testCreateRace},
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

func readAll(t *testing.T, s Store, key string) ([]byte, Info) {
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

func create(t *testing.T, s Store, key string, data []byte) Info {
	t.Helper()
	info, err := s.Create(context.Background(), key, bytes.NewReader(data))
	if err != nil {
		t.Fatalf("Create(%q, %d bytes): %v", key, len(data), err)
	}
	return info
}

func testCreateGetHead(t *testing.T, _ backend, s Store) {
	ctx := context.Background()
	data := []byte("PAR1 not really PAR1")
	info, err := s.Create(ctx, "topic/p=0/00000000000000000042.parquet", bytes.NewReader(data),
		ContentType("application/vnd.apache.parquet"), Metadata("first-offset", "42"))
	if err != nil {
		t.Fatal(err)
	}
	if info.Key != "topic/p=0/00000000000000000042.parquet" || info.Size != int64(len(data)) || info.ETag == "" {
		t.Errorf("Create returned %+v", info)
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

// testCreateSizes covers the single-PUT and multipart paths and their
// boundary: an object of exactly one part is still a single PUT.
func testCreateSizes(t *testing.T, b backend, s Store) {
	sizes := []int{0, 1, testPartSize - 1, testPartSize, testPartSize + 1, 2*testPartSize + 3}
	for i, n := range sizes {
		data := payload(n, uint64(i))
		key := fmt.Sprintf("sizes/%d", n)
		// OneByteReader-like trickle for one size proves that short reads
		// are assembled into full parts.
		var r io.Reader = bytes.NewReader(data)
		if n == testPartSize+1 {
			r = iotest.HalfReader(r)
		}
		info, err := s.Create(context.Background(), key, r)
		if err != nil {
			t.Fatalf("Create(%d bytes): %v", n, err)
		}
		if info.Size != int64(n) {
			t.Errorf("Create(%d bytes): Size = %d", n, info.Size)
		}
		got, _ := readAll(t, s, key)
		if !bytes.Equal(got, data) {
			t.Errorf("Create(%d bytes): read back %d bytes that differ", n, len(got))
		}
		if b.name == "s3" {
			// S3 marks multipart objects' ETags with their part count.
			wantParts := ""
			if n > testPartSize {
				wantParts = fmt.Sprintf("-%d", (n+testPartSize-1)/testPartSize)
			}
			if dash := strings.LastIndexByte(info.ETag, '-'); (dash >= 0) != (wantParts != "") ||
				(dash >= 0 && info.ETag[dash:] != wantParts) {
				t.Errorf("Create(%d bytes): ETag %q, want a multipart ETag ending in %q (empty: single PUT)", n, info.ETag, wantParts)
			}
		}
	}
	if p := b.pending(t, s, ""); len(p) != 0 {
		t.Errorf("unfinished uploads left: %q", p)
	}
}

func testCreateExists(t *testing.T, b backend, s Store) {
	first := []byte("first")
	create(t, s, "k", first)
	_, err := s.Create(context.Background(), "k", strings.NewReader("second"))
	if !errors.Is(err, ErrExists) {
		t.Fatalf("second Create: err = %v, want ErrExists", err)
	}
	if got, _ := readAll(t, s, "k"); !bytes.Equal(got, first) {
		t.Errorf("after a refused Create, object = %q, want %q", got, first)
	}
}

// testCreateExistsMultipart needs If-None-Match on CompleteMultipartUpload.
func testCreateExistsMultipart(t *testing.T, b backend, s Store) {
	first := payload(10, 1)
	create(t, s, "big", first)
	_, err := s.Create(context.Background(), "big", bytes.NewReader(payload(2*testPartSize+1, 2)))
	if !errors.Is(err, ErrExists) {
		t.Fatalf("multipart Create over an existing key: err = %v, want ErrExists", err)
	}
	if got, _ := readAll(t, s, "big"); !bytes.Equal(got, first) {
		t.Errorf("after a refused multipart Create, object has %d bytes, want the first %d", len(got), len(first))
	}
	if p := b.pending(t, s, ""); len(p) != 0 {
		t.Errorf("refused multipart Create left uploads: %q", p)
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
				_, errs[w] = s.Create(context.Background(), key, bytes.NewReader(payload(size, uint64(w))))
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

var errBoom = errors.New("boom")

func testReaderError(t *testing.T, b backend, s Store) {
	for _, n := range []int{10, testPartSize + 10, 2*testPartSize + 10} {
		key := fmt.Sprintf("broken/%d", n)
		r := io.MultiReader(bytes.NewReader(payload(n, 3)), iotest.ErrReader(errBoom))
		_, err := s.Create(context.Background(), key, r)
		if !errors.Is(err, errBoom) {
			t.Errorf("Create with a reader failing after %d bytes: err = %v, want errBoom", n, err)
		}
		if _, err := s.Head(context.Background(), key); !errors.Is(err, ErrNotExist) {
			t.Errorf("after failed Create of %d bytes, Head: err = %v, want ErrNotExist", n, err)
		}
	}
	if p := b.pending(t, s, ""); len(p) != 0 {
		t.Errorf("failed Creates left uploads: %q", p)
	}
	// A reader whose error wraps io.EOF is a failure, not a clean end.
	wrapped := fmt.Errorf("decoder: %w", io.EOF)
	r := io.MultiReader(bytes.NewReader(payload(testPartSize+10, 3)), iotest.ErrReader(wrapped))
	if _, err := s.Create(context.Background(), "broken/eof", r); !errors.Is(err, wrapped) {
		t.Errorf("Create with a reader failing with a wrapped EOF: err = %v", err)
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

func testCancel(t *testing.T, b backend, s Store) {
	for _, after := range []int{0, testPartSize + 1} {
		ctx, cancel := context.WithCancel(context.Background())
		r := &cancelReader{r: bytes.NewReader(payload(3*testPartSize, 4)), after: after, cancel: cancel}
		key := fmt.Sprintf("cancelled/%d", after)
		_, err := s.Create(ctx, key, r)
		cancel()
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Create cancelled after %d bytes: err = %v, want context.Canceled", after, err)
		}
		if _, err := s.Head(context.Background(), key); !errors.Is(err, ErrNotExist) {
			t.Errorf("after cancelled Create, Head: err = %v, want ErrNotExist", err)
		}
	}
	if p := b.pending(t, s, ""); len(p) != 0 {
		t.Errorf("cancelled Creates left uploads: %q", p)
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
		_, err := s.Create(ctx, key, strings.NewReader("x"))
		if err == nil || errors.Is(err, ErrExists) {
			t.Errorf("Create(%q): err = %v, want an invalid key error", key, err)
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
