package objstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pqsink/pqsink/internal/testutil/minio"
)

// countingPool is a BufferPool that counts what it lends and what comes
// back, checks that only buffers it lent come back, once each, and can
// hold its lending to a budget of buffers, as the sink's pool will.
type countingPool struct {
	tokens chan struct{} // one per buffer out; nil without a budget

	mu                      sync.Mutex
	out                     map[*byte]bool
	gets, puts, drops, peak int
	strays                  int // buffers given back that were not out
}

// newCountingPool returns a pool that lends at most budget buffers at once
// (0: Get blocks until its context ends), or any number if budget < 0.
func newCountingPool(budget int) *countingPool {
	p := &countingPool{out: make(map[*byte]bool)}
	if budget >= 0 {
		p.tokens = make(chan struct{}, budget)
	}
	return p
}

func (p *countingPool) Get(ctx context.Context, size int) ([]byte, error) {
	if p.tokens != nil {
		select {
		case p.tokens <- struct{}{}:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	b := make([]byte, size)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.gets++
	p.out[&b[0]] = true
	p.peak = max(p.peak, len(p.out))
	return b, nil
}

func (p *countingPool) Put(b []byte)  { p.giveBack(b, &p.puts) }
func (p *countingPool) Drop(b []byte) { p.giveBack(b, &p.drops) }

func (p *countingPool) giveBack(b []byte, count *int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(b) == 0 || !p.out[&b[0]] {
		p.strays++
		return
	}
	delete(p.out, &b[0])
	*count++
	if p.tokens != nil {
		<-p.tokens
	}
}

type poolStats struct{ gets, puts, drops, out, peak int }

// stats checks that every buffer lent has come back, and returns the
// counts.
func (p *countingPool) stats(t *testing.T) poolStats {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.strays != 0 {
		t.Errorf("%d buffers came back that were not lent, or came back twice", p.strays)
	}
	if len(p.out) != 0 {
		t.Errorf("%d buffers lent and never given back", len(p.out))
	}
	return poolStats{p.gets, p.puts, p.drops, len(p.out), p.peak}
}

// TestS3Upload covers what is particular to S3 uploads: part buffers and
// their pool, the bound on parts in flight, and stores without
// conditional writes.
func TestS3Upload(t *testing.T) {
	srv := minio.Start(t)
	ctx := context.Background()

	t.Run("BuffersReturned", func(t *testing.T) {
		pool := newCountingPool(-1)
		s, _ := openMinIO(t, srv, Buffers(pool), Concurrency(2))
		defer s.Close()
		for _, n := range []int{0, 1, testPartSize, testPartSize + 1, 3*testPartSize + 7} {
			before := pool.stats(t)
			if _, err := stream(t, s, fmt.Sprintf("ok/%d", n), payload(n, 1), 1<<20+5); err != nil {
				t.Fatal(err)
			}
			st := pool.stats(t)
			wantGets := (n + testPartSize - 1) / testPartSize
			if st.gets-before.gets != wantGets || st.puts-before.puts != wantGets || st.drops != 0 {
				t.Errorf("%d bytes: %d gets, %d puts, %d drops; want %d gets, all put back", n,
					st.gets-before.gets, st.puts-before.puts, st.drops, wantGets)
			}
		}
		if st := pool.stats(t); st.peak > 3 {
			t.Errorf("an upload held %d buffers at once, want at most Concurrency+1 = 3", st.peak)
		}

		// A refused single PUT drops its buffer (net/http may still hold
		// it); a refused multipart completion has none, its parts went up.
		create(t, s, "taken", []byte("first"))
		before := pool.stats(t)
		if _, err := stream(t, s, "taken", []byte("second"), 100); !errors.Is(err, ErrExists) {
			t.Fatalf("err = %v, want ErrExists", err)
		}
		if st := pool.stats(t); st.drops-before.drops != 1 || st.puts != before.puts {
			t.Errorf("refused PUT: %d drops, %d puts, want the buffer dropped", st.drops-before.drops, st.puts-before.puts)
		}
		before = pool.stats(t)
		if _, err := stream(t, s, "taken", payload(2*testPartSize+1, 2), 1<<20); !errors.Is(err, ErrExists) {
			t.Fatalf("err = %v, want ErrExists", err)
		}
		if st := pool.stats(t); st.drops != before.drops || st.puts-before.puts != 3 {
			t.Errorf("refused completion: %d drops, %d puts, want 3 puts", st.drops-before.drops, st.puts-before.puts)
		}

		// An aborted upload gives back the buffer it was filling.
		up, err := s.Create(ctx, "aborted")
		if err != nil {
			t.Fatal(err)
		}
		writeChunks(t, up, payload(testPartSize+10, 3), 1<<20)
		if err := up.Abort(ctx); err != nil {
			t.Fatal(err)
		}
		pool.stats(t)
	})

	t.Run("SharedPool", func(t *testing.T) {
		// Uploads of two stores at once, all from one pool.
		pool := newCountingPool(-1)
		bucket := srv.NewBucket(t)
		stores := []Store{
			openBucket(t, srv.Endpoint, srv, bucket, Buffers(pool)),
			openBucket(t, srv.Endpoint, srv, bucket, Buffers(pool), Concurrency(3)),
		}
		defer stores[0].Close()
		defer stores[1].Close()
		const uploads = 8
		var wg sync.WaitGroup
		for i := range uploads {
			wg.Go(func() {
				data := payload(3*testPartSize+7, uint64(i))
				if _, err := stream(t, stores[i%2], fmt.Sprintf("shared/%d", i), data, 1<<16+i); err != nil {
					t.Errorf("upload %d: %v", i, err)
				}
			})
		}
		wg.Wait()
		for i := range uploads {
			if got, _ := readAll(t, stores[0], fmt.Sprintf("shared/%d", i)); !bytes.Equal(got, payload(3*testPartSize+7, uint64(i))) {
				t.Errorf("object %d reads back wrong", i)
			}
		}
		st := pool.stats(t)
		if st.gets != uploads*4 || st.puts != st.gets {
			t.Errorf("%d gets, %d puts; want %d of each", st.gets, st.puts, uploads*4)
		}
		if maxOut := uploads / 2 * (3 + 4); st.peak > maxOut {
			t.Errorf("%d buffers out at once, want at most %d", st.peak, maxOut)
		}
	})

	t.Run("BudgetOfOneBuffer", func(t *testing.T) {
		// Each part waits for the previous one's buffer to come back: an
		// upload goes on as long as one buffer does.
		pool := newCountingPool(1)
		s, _ := openMinIO(t, srv, Buffers(pool))
		defer s.Close()
		data := payload(3*testPartSize+7, 4)
		if _, err := stream(t, s, "one", data, 1<<20); err != nil {
			t.Fatal(err)
		}
		if got, _ := readAll(t, s, "one"); !bytes.Equal(got, data) {
			t.Error("object reads back wrong")
		}
		if st := pool.stats(t); st.peak != 1 || st.gets != 4 {
			t.Errorf("%d gets, peak %d, want 4 gets of one buffer at a time", st.gets, st.peak)
		}
	})

	t.Run("BlockedGetRespectsContext", func(t *testing.T) {
		pool := newCountingPool(0) // never lends
		s, _ := openMinIO(t, srv, Buffers(pool))
		defer s.Close()
		for _, wantErr := range []error{context.Canceled, context.DeadlineExceeded} {
			var uctx context.Context
			var cancel context.CancelFunc
			if wantErr == context.Canceled {
				uctx, cancel = context.WithCancel(ctx)
				time.AfterFunc(100*time.Millisecond, cancel)
			} else {
				uctx, cancel = context.WithTimeout(ctx, 100*time.Millisecond)
			}
			up, err := s.Create(uctx, "blocked")
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			if _, err := up.Write([]byte("x")); !errors.Is(err, wantErr) {
				t.Errorf("Write waiting for a buffer: err = %v, want %v", err, wantErr)
			}
			if d := time.Since(start); d < 90*time.Millisecond {
				t.Errorf("Write returned after %v, before its context ended", d)
			}
			if err := up.Abort(ctx); err != nil {
				t.Error(err)
			}
			cancel()
		}
		if _, err := s.Head(ctx, "blocked"); !errors.Is(err, ErrNotExist) {
			t.Errorf("Head: err = %v, want ErrNotExist", err)
		}
		if p := s3Pending(t, s, ""); len(p) != 0 {
			t.Errorf("uploads left: %q", p)
		}
	})

	t.Run("AbortedElsewhere", func(t *testing.T) {
		// Another process aborts the upload as stale (a clock gone wrong,
		// an olderThan too short): Commit fails, neither ErrExists nor
		// ErrNotExist, and leaves nothing.
		s, _ := openMinIO(t, srv)
		defer s.Close()
		up, err := s.Create(ctx, "k")
		if err != nil {
			t.Fatal(err)
		}
		writeChunks(t, up, payload(2*testPartSize+1, 6), 1<<20)
		time.Sleep(10 * time.Millisecond)
		if n, err := s.AbortStaleUploads(ctx, "", 0); n != 1 || err != nil {
			t.Fatalf("AbortStaleUploads = %d, %v; want 1 aborted", n, err)
		}
		_, err = up.Commit(ctx)
		if err == nil || errors.Is(err, ErrExists) || errors.Is(err, ErrNotExist) {
			t.Errorf("Commit of an upload aborted elsewhere: err = %v, want a plain failure", err)
		}
		if err := up.Abort(ctx); err != nil {
			t.Error(err)
		}
		if _, err := s.Head(ctx, "k"); !errors.Is(err, ErrNotExist) {
			t.Errorf("Head: err = %v, want ErrNotExist", err)
		}
	})

	t.Run("ConditionalWritesOff", func(t *testing.T) {
		s, _ := openMinIO(t, srv, ConditionalWrites(false))
		defer s.Close()
		for _, n := range []int{10, 2*testPartSize + 1} {
			key := fmt.Sprintf("k%d", n)
			create(t, s, key, []byte("first"))
			second := payload(n, 5)
			if _, err := stream(t, s, key, second, 1<<20); err != nil {
				t.Fatalf("overwrite of %d bytes: %v", n, err)
			}
			if got, _ := readAll(t, s, key); !bytes.Equal(got, second) {
				t.Errorf("overwrite of %d bytes: object has %d bytes, want the second version", n, len(got))
			}
		}
	})
}

// BenchmarkUploadMinIO streams 64 MiB into one object in 1 MiB writes,
// with the default part size and concurrency, as the sink writes row
// groups.
func BenchmarkUploadMinIO(b *testing.B) {
	const size, write = 64 << 20, 1 << 20
	srv := minio.Start(b)
	s, _ := openMinIO(b, srv, PartSize(DefaultPartSize))
	defer s.Close()
	data := payload(size, 1)
	ctx := context.Background()
	b.SetBytes(size)
	for i := 0; b.Loop(); i++ {
		up, err := s.Create(ctx, fmt.Sprintf("bench/%d", i))
		if err != nil {
			b.Fatal(err)
		}
		for off := 0; off < size; off += write {
			if _, err := up.Write(data[off : off+write]); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := up.Commit(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// TestConditionalPutRace: a conditional PUT of an existing key may meet a
// 412 sent before the body was read, and see only the broken connection.
// It must come back as ErrExists at once, never retried.
func TestConditionalPutRace(t *testing.T) {
	srv := minio.Start(t)
	var retries atomic.Int64
	s, _ := openMinIO(t, srv, OnRetry(func(string, int, error) { retries.Add(1) }))
	defer s.Close()
	ctx := context.Background()
	body := payload(3<<20, 9)
	for i := range 40 {
		key := fmt.Sprintf("race/%d", i)
		if _, err := Put(ctx, s, key, bytes.NewReader([]byte("first"))); err != nil {
			t.Fatal(err)
		}
		if _, err := Put(ctx, s, key, bytes.NewReader(body)); !errors.Is(err, ErrExists) {
			t.Fatalf("%s: err = %v, want ErrExists", key, err)
		}
	}
	if n := retries.Load(); n != 0 {
		t.Errorf("%d retries of PUTs refused as existing, want none", n)
	}
}
