package objstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"cloud.google.com/go/storage"
	"google.golang.org/api/option"

	"github.com/fsouza/fake-gcs-server/fakestorage"

	"github.com/pqsink/pqsink/internal/testutil/fakegcs"
)

// What these tests check against fake-gcs-server only, since no test here
// reaches the real service (docs/configuration.md lists it too):
//   - that GCS refuses with 412 a write with ifGenerationMatch=0 over an
//     existing name, on simple, multipart and resumable uploads alike.
//     fake-gcs-server (v1.56) enforces it, atomically under its lock, and
//     TestFakeGCSPreconditions pins that; TestGCSSendsPrecondition checks
//     that every upload request of the store carries the precondition, which
//     is what the real service's documented behaviour rests on;
//   - that a resumable session never finalized leaves no object;
//   - the retries on 503, which the emulator answers on purpose to the
//     first attempt of every request (TestGCSRetries).

// openFakeGCS opens a store on a fresh bucket of srv, under a key prefix
// so that prefix handling is exercised by every test, with chunks of
// testPartSize.
func openFakeGCS(t testing.TB, srv *fakegcs.Server, opts ...Option) (Store, string) {
	t.Helper()
	bucket := srv.NewBucket()
	return openGCSBucket(t, srv.Endpoint, bucket, opts...), bucket
}

func openGCSBucket(t testing.TB, endpoint, bucket string, opts ...Option) Store {
	t.Helper()
	u := fmt.Sprintf("gs://%s/pre/fix?part_size=%d", bucket, testPartSize)
	s, err := Open(context.Background(), u, append([]Option{Endpoint(endpoint)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestGCSStore(t *testing.T) {
	srv := fakegcs.Start(t)
	testStore(t, backend{
		name: "gcs",
		open: func(t *testing.T, opts ...Option) Store {
			s, _ := openFakeGCS(t, srv, opts...)
			return s
		},
		// GCS shows no unfinished upload: a resumable session holds no
		// name. What the tests check with pending, that nothing is left,
		// they also check with Head and List.
		pending:          func(*testing.T, Store, string) []string { return nil },
		invisibleUploads: true,
		startUpload: func(t *testing.T, s Store, key string) {
			// A writer that dies with a resumable upload under way: the
			// session is started and has a chunk, and is never finalized.
			before := len(srv.Requests())
			ctx, cancel := context.WithCancel(context.Background())
			up, err := s.Create(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			writeChunks(t, up, payload(2*testPartSize+1, 9), 1<<20)
			cancel()
			up.Abort(context.Background()) // only ends the SDK's goroutine: GCS sees the same as after a crash
			chunks := 0
			for _, r := range srv.Requests()[before:] {
				if strings.Contains(r.Query, "upload_id=") {
					chunks++
				}
			}
			if chunks == 0 {
				t.Fatalf("no chunk of a resumable upload was sent for %s", key)
			}
		},
	})
}

// TestFakeGCSPreconditions pins the emulator behaviour that the GCS
// store's create-if-absent rests on, with plain SDK calls: a write with
// ifGenerationMatch=0 over an existing name fails with 412, as a single
// request and as a resumable upload, and leaves the object as it was.
func TestFakeGCSPreconditions(t *testing.T) {
	srv := fakegcs.Start(t)
	bucket := srv.NewBucket()
	ctx := context.Background()
	client, err := storage.NewClient(ctx, option.WithEndpoint(srv.Endpoint+"/storage/v1/"), option.WithoutAuthentication())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	obj := client.Bucket(bucket).Object("k").If(storage.Conditions{DoesNotExist: true})
	write := func(data []byte, chunkSize int) error {
		w := obj.NewWriter(ctx)
		w.ChunkSize = chunkSize
		if _, err := w.Write(data); err != nil {
			w.Close()
			return err
		}
		return w.Close()
	}
	if err := write([]byte("first"), 0); err != nil {
		t.Fatalf("first conditional write: %v", err)
	}
	tests := []struct {
		name      string
		size      int
		chunkSize int
	}{
		{"single request", 10, 0},
		{"single chunk", 10, 256 << 10},
		{"resumable", 3 << 18, 256 << 10}, // three chunks
	}
	for _, tt := range tests {
		err := write(payload(tt.size, 1), tt.chunkSize)
		if code := gcsStatus(err); code != http.StatusPreconditionFailed {
			t.Errorf("%s over an existing name: status %d (%v), want 412", tt.name, code, err)
		}
	}
	r, err := client.Bucket(bucket).Object("k").NewReader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if got, _ := io.ReadAll(r); string(got) != "first" {
		t.Errorf("object = %q after refused writes, want %q", got, "first")
	}
}

// TestGCSSendsPrecondition checks what the real service's create-if-absent
// needs from the client: every request that creates an object, single or
// resumable, carries ifGenerationMatch=0.
func TestGCSSendsPrecondition(t *testing.T) {
	srv := fakegcs.Start(t)
	s, bucket := openFakeGCS(t, srv)
	defer s.Close()
	for i, n := range []int{0, 10, testPartSize, testPartSize + 1, 3*testPartSize + 7} {
		if _, err := stream(t, s, fmt.Sprintf("k%d", i), payload(n, uint64(i)), 1<<20); err != nil {
			t.Fatal(err)
		}
	}
	types := map[string]int{}
	for _, r := range srv.Requests() {
		if r.Method != http.MethodPost || !strings.HasPrefix(r.Path, "/upload/storage/v1/b/"+bucket+"/o") {
			continue
		}
		q, err := url.ParseQuery(r.Query)
		if err != nil {
			t.Fatal(err)
		}
		if q.Has("upload_id") {
			continue // a chunk of a resumable upload, whose start carried the precondition
		}
		types[q.Get("uploadType")]++
		if q.Get("ifGenerationMatch") != "0" {
			t.Errorf("upload request %s?%s without ifGenerationMatch=0", r.Path, r.Query)
		}
	}
	// Three objects of at most a chunk, two resumable uploads.
	if types["multipart"] != 3 || types["resumable"] != 2 {
		t.Errorf("upload requests by type = %v, want 3 multipart (single request) and 2 resumable", types)
	}
}

// reservingPool is a countingPool that also counts reservations
// (BufferReserver).
type reservingPool struct {
	*countingPool
	reserved, peakReserved atomic.Int64
}

func (p *reservingPool) Reserve(ctx context.Context, n int) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	v := p.reserved.Add(int64(n))
	for {
		peak := p.peakReserved.Load()
		if v <= peak || p.peakReserved.CompareAndSwap(peak, v) {
			return nil
		}
	}
}

func (p *reservingPool) Release(n int) { p.reserved.Add(-int64(n)) }

// TestGCSUploadBuffers: an upload holds at most one chunk buffer from the
// pool and, while a resumable upload lasts, a reservation of one chunk for
// the SDK's buffer; every one of them comes back, on every path.
func TestGCSUploadBuffers(t *testing.T) {
	srv := fakegcs.Start(t)
	ctx := context.Background()
	sizes := []int{0, 1, testPartSize, testPartSize + 1, 5*testPartSize + 13}

	t.Run("Reserver", func(t *testing.T) {
		pool := &reservingPool{countingPool: newCountingPool(-1)}
		s, _ := openFakeGCS(t, srv, Buffers(pool))
		defer s.Close()
		for _, n := range sizes {
			data := payload(n, uint64(n))
			key := fmt.Sprintf("r/%d", n)
			if _, err := stream(t, s, key, data, 7919, 1<<20); err != nil {
				t.Fatalf("%d bytes: %v", n, err)
			}
			if got, _ := readAll(t, s, key); !bytes.Equal(got, data) {
				t.Errorf("%d bytes: read back %d bytes that differ", n, len(got))
			}
		}
		// A refused commit and an abort, both resumable, give everything back.
		if _, err := stream(t, s, "r/1", payload(2*testPartSize, 1), 1<<20); !errors.Is(err, ErrExists) {
			t.Errorf("second upload of r/1: err = %v, want ErrExists", err)
		}
		up, err := s.Create(ctx, "r/aborted")
		if err != nil {
			t.Fatal(err)
		}
		writeChunks(t, up, payload(2*testPartSize+1, 2), 1<<20)
		if err := up.Abort(ctx); err != nil {
			t.Fatal(err)
		}
		st := pool.stats(t)
		if st.peak != 1 {
			t.Errorf("peak chunk buffers out = %d, want 1 (uploads one after the other)", st.peak)
		}
		if got := pool.reserved.Load(); got != 0 {
			t.Errorf("%d bytes still reserved after every upload ended", got)
		}
		if got := pool.peakReserved.Load(); got != testPartSize {
			t.Errorf("peak reservation = %d bytes, want one chunk, %d", got, testPartSize)
		}
	})

	t.Run("PoolWithoutReserve", func(t *testing.T) {
		// With a pool that cannot count a reservation, a buffer from Get
		// stands in for the SDK's.
		pool := newCountingPool(-1)
		s, _ := openFakeGCS(t, srv, Buffers(pool))
		defer s.Close()
		for _, n := range sizes {
			if _, err := stream(t, s, fmt.Sprintf("p/%d", n), payload(n, 3), 1<<20); err != nil {
				t.Fatalf("%d bytes: %v", n, err)
			}
		}
		if st := pool.stats(t); st.peak != 2 {
			t.Errorf("peak buffers out = %d, want 2 (the chunk filling and the stand-in for the SDK's)", st.peak)
		}
	})

	t.Run("BudgetExhausted", func(t *testing.T) {
		// A pool that never lends: Write waits for it within the Create
		// context, and the upload leaves nothing.
		pool := newCountingPool(0)
		s, _ := openFakeGCS(t, srv, Buffers(pool))
		defer s.Close()
		cctx, cancel := context.WithCancel(ctx)
		up, err := s.Create(cctx, "b/k")
		if err != nil {
			t.Fatal(err)
		}
		cancel()
		if _, err := up.Write([]byte("x")); !errors.Is(err, context.Canceled) {
			t.Errorf("Write with no buffer to be had: err = %v, want context.Canceled", err)
		}
		up.Abort(ctx)
		if _, err := s.Head(ctx, "b/k"); !errors.Is(err, ErrNotExist) {
			t.Errorf("Head: err = %v, want ErrNotExist", err)
		}
	})
}

// TestGCSTwoOwners: two uploads of one key in flight at once, as a fenced
// owner and its successor would run them; whichever commits first wins,
// the other gets ErrExists, in every order and size.
func TestGCSTwoOwners(t *testing.T) {
	srv := fakegcs.Start(t)
	s, _ := openFakeGCS(t, srv)
	defer s.Close()
	ctx := context.Background()
	for _, n := range []int{10, 3*testPartSize + 1} {
		key := fmt.Sprintf("owners/%d", n)
		a, err := s.Create(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		b, err := s.Create(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		writeChunks(t, a, payload(n, 1), 1<<20)
		writeChunks(t, b, payload(n, 2), 1<<20)
		if _, err := b.Commit(ctx); err != nil {
			t.Fatalf("%d bytes: first Commit: %v", n, err)
		}
		if _, err := a.Commit(ctx); !errors.Is(err, ErrExists) {
			t.Errorf("%d bytes: second Commit: err = %v, want ErrExists", n, err)
		}
		a.Abort(ctx)
		if got, _ := readAll(t, s, key); !bytes.Equal(got, payload(n, 2)) {
			t.Errorf("%d bytes: the object is not the first committer's", n)
		}
	}
}

func TestGCSReaderAtSeesReplacement(t *testing.T) {
	srv := fakegcs.Start(t)
	s, _ := openFakeGCS(t, srv)
	defer s.Close()
	ctx := context.Background()
	create(t, s, "k", []byte("version one"))
	r, err := s.NewReaderAt(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	create(t, s, "k", []byte("version two"))
	if _, err := r.ReadAt(make([]byte, 4), 0); err == nil || !strings.Contains(err.Error(), "changed") {
		t.Errorf("ReadAt after replacement: err = %v, want 'object changed'", err)
	}
}

func TestGCSPrefixAndPaging(t *testing.T) {
	srv := fakegcs.Start(t)
	s, bucket := openFakeGCS(t, srv)
	defer s.Close()
	// Objects beside the prefix are not the store's.
	for _, k := range []string{"pre/fixed", "pre/other", "a/b"} {
		srv.Fake().CreateObject(fakeObject(bucket, k))
	}
	// More objects than three pages of a listing hold.
	const n = 1203
	want := make([]string, n)
	for i := range n {
		want[i] = fmt.Sprintf("many/%05d", i)
		srv.Fake().CreateObject(fakeObject(bucket, "pre/fix/"+want[i]))
	}
	s.(*gcsStore).listPageSize = 500 // the emulator gives everything in one page unless asked
	got := listKeys(t, s, "")
	if len(got) != n {
		t.Fatalf("List returned %d keys, want %d", len(got), n)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("List key %d = %q, want %q", i, got[i], want[i])
		}
	}
	pages := 0
	for _, r := range srv.Requests() {
		if r.Method == http.MethodGet && r.Path == "/storage/v1/b/"+bucket+"/o" {
			pages++
		}
	}
	if pages != 3 {
		t.Errorf("listing took %d requests, want 3 pages", pages)
	}
}

// TestGCSRetries has the emulator answer 503 to the first attempt of
// every request: reads, single-request uploads, the starts of resumable
// uploads and each of their chunks are retried, the hook hears of it, and
// each object lands once, whole.
func TestGCSRetries(t *testing.T) {
	var mu sync.Mutex
	failed := map[string]bool{} // a request's method, path and query: failed once already
	srv := fakegcs.Start(t, fakegcs.WithMiddleware(func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			op := r.Method + " " + r.URL.Path + "?" + r.URL.RawQuery + " " + r.Header.Get("Content-Range")
			mu.Lock()
			fail := !failed[op]
			failed[op] = true
			mu.Unlock()
			if fail {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusServiceUnavailable)
				io.WriteString(w, `{"error":{"code":503,"message":"try again"}}`)
				return
			}
			next.ServeHTTP(w, r)
		})
	}))
	var hookMu sync.Mutex
	heard := map[string]int{} // "op attempt" -> calls
	bucket := srv.NewBucket()
	s := openGCSBucket(t, srv.Endpoint, bucket, OnRetry(func(op string, attempt int, err error) {
		hookMu.Lock()
		defer hookMu.Unlock()
		heard[fmt.Sprintf("%s %d", op, attempt)]++
	}))
	defer s.Close()
	for i, n := range []int{10, 2*testPartSize + 3} {
		key := fmt.Sprintf("k%d", i)
		data := payload(n, uint64(i))
		if _, err := stream(t, s, key, data, 1<<20); err != nil {
			t.Fatalf("%d bytes through failing requests: %v", n, err)
		}
		if got, _ := readAll(t, s, key); !bytes.Equal(got, data) {
			t.Errorf("%d bytes: read back %d bytes that differ", n, len(got))
		}
	}
	// The single request of the small object, the start of the large
	// one's resumable upload and its chunks, and the reads.
	for _, want := range []string{"InsertObject 1", "WriteObject 1", "ReadObject 1"} {
		if heard[want] == 0 {
			t.Errorf("OnRetry never heard %q; heard %v", want, heard)
		}
	}
	// The resumable upload: its start and its three chunks (two full, the
	// last of 3 bytes), each failed once. (The start's failure and the
	// first chunk's are two in a row: no chunk went in between.)
	if got := heard["WriteObject 1"] + heard["WriteObject 2"]; got != 4 {
		t.Errorf("OnRetry heard the resumable upload fail %d times, want 4 (start and 3 chunks); heard %v", got, heard)
	}

	// With no retries allowed, the first 503 fails the upload, single
	// request or resumable, which leaves nothing.
	s0 := openGCSBucket(t, srv.Endpoint, bucket, MaxRetries(0))
	defer s0.Close()
	for _, n := range []int{1, 2*testPartSize + 3} {
		key := fmt.Sprintf("fresh-%d", n)
		if _, err := Put(context.Background(), s0, key, bytes.NewReader(payload(n, 5))); err == nil || errors.Is(err, ErrExists) || !strings.Contains(err.Error(), "503") {
			t.Errorf("%d bytes through a 503 without retries: err = %v, want the 503", n, err)
		}
		if _, err := s.Head(context.Background(), key); !errors.Is(err, ErrNotExist) {
			t.Errorf("after a failed upload of %d bytes, Head: err = %v, want ErrNotExist", n, err)
		}
	}
}

func TestGCSOpenErrors(t *testing.T) {
	tests := []struct {
		url  string
		opts []Option
		want string
	}{
		{"gs:///prefix", nil, "no bucket"},
		{"gs://b?region=x", nil, `unknown parameter "region"`},
		{"gs://b?part_size=1024", nil, "part size 1024"},
		{"gs://b?endpoint=localhost:4443", nil, "endpoint"},
		{"gs://b", []Option{Region("us")}, "option Region applies only to s3"},
		{"gs://b", []Option{ConditionalWrites(false)}, "option ConditionalWrites applies only to s3"},
		{"gs://b", []Option{Concurrency(4)}, "option Concurrency applies only to s3"},
		{"gs://b", []Option{StaticCredentials("a", "secret", "")}, "option StaticCredentials applies only to s3"},
	}
	for _, tt := range tests {
		s, err := Open(context.Background(), tt.url, tt.opts...)
		if err == nil {
			s.Close()
			t.Errorf("Open(%q) succeeded, want an error containing %q", tt.url, tt.want)
			continue
		}
		if !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Open(%q): %v, want an error containing %q", tt.url, err, tt.want)
		}
		if strings.Contains(err.Error(), "secret") {
			t.Errorf("Open(%q): the error shows the secret: %v", tt.url, err)
		}
	}
}

// TestGCSEmulatorHost: without an endpoint, STORAGE_EMULATOR_HOST sends
// the store to an emulator, without credentials, as the SDK does.
func TestGCSEmulatorHost(t *testing.T) {
	srv := fakegcs.Start(t)
	bucket := srv.NewBucket()
	t.Setenv("STORAGE_EMULATOR_HOST", srv.Host())
	s, err := Open(context.Background(), "gs://"+bucket+"/p")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	create(t, s, "k", []byte("via the emulator host"))
	if _, err := srv.Fake().GetObject(bucket, "p/k"); err != nil {
		t.Errorf("object not in the emulator under the prefix: %v", err)
	}
}

// fakeObject is a one-byte object put straight into the emulator.
func fakeObject(bucket, name string) fakestorage.Object {
	return fakestorage.Object{ObjectAttrs: fakestorage.ObjectAttrs{BucketName: bucket, Name: name}, Content: []byte("y")}
}

// TestGCSRedact: the session URI of a resumable upload, which lets anyone
// write to the session, never shows in an error's text, and the error
// underneath stays reachable.
func TestGCSRedact(t *testing.T) {
	secret := "ADPycdt-SECRET_session-id"
	cause := errors.New("connection reset by peer")
	ue := &url.Error{Op: "Put", URL: "https://storage.googleapis.com/upload/storage/v1/b/b/o?uploadType=resumable&name=k&upload_id=" + secret, Err: cause}
	err := gcsError(fmt.Errorf("chunk: %w", ue))
	if strings.Contains(err.Error(), secret) || !strings.Contains(err.Error(), "upload_id=REDACTED") {
		t.Errorf("error text = %q, want the upload id redacted", err)
	}
	var got *url.Error
	if !errors.Is(err, cause) || !errors.As(err, &got) {
		t.Errorf("the redacted error lost its chain: %v", err)
	}
	if plain := errors.New("no session here"); gcsRedact(plain) != plain {
		t.Errorf("an error without a session id was wrapped")
	}
}
