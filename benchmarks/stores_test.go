package benchmarks

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/pqsink/pqsink/internal/testutil/azurite"
	"github.com/pqsink/pqsink/internal/testutil/fakegcs"
	"github.com/pqsink/pqsink/internal/testutil/minio"
	"github.com/pqsink/pqsink/objstore"
	"github.com/pqsink/pqsink/rowgroup"
	"github.com/pqsink/pqsink/writer"
)

const (
	// storePartSize is every store's part (S3), chunk (GCS) or block
	// (Azure) size in BenchmarkStoreUpload.
	storePartSize = 8 << 20
	// storeWriteSize is how much each Write hands the upload: about a
	// row group of a small file, as the sink's writer flushes them.
	storeWriteSize = 1 << 20
)

// BenchmarkStoreUpload uploads the same Parquet files (clickstream rows,
// as pqsink writes them) to each store that pqsink supports, each started
// on this machine: a directory, MinIO (S3), fake-gcs-server (GCS, in this
// process) and Azurite (Azure Blob Storage, a Node process). A "small"
// file fits in one part and goes up in a single request; a "large" one is
// a multipart upload, a resumable upload or staged blocks of
// storePartSize. Besides MB/s and Go's B/op, it reports pool-peak-MiB: the
// most memory that the store's part buffers (and, on GCS, the SDK's own
// chunk buffer, which the store reserves) held at once, which is what the
// sink's memory budget counts. fake-gcs-server runs in this process, so
// its allocations are in GCS's B/op; MinIO's and Azurite's are not.
//
// The emulators are not the services: the numbers compare the clients'
// costs on one machine, not the clouds' throughput.
func BenchmarkStoreUpload(b *testing.B) {
	files := storeBenchFiles(b)
	stores := []struct {
		name string
		open func(b *testing.B, pool objstore.BufferPool) objstore.Store
	}{
		{"dir", func(b *testing.B, pool objstore.BufferPool) objstore.Store {
			// No parts: a temporary file beside the object's name.
			return openBenchStore(b, "file://"+b.TempDir(), objstore.Buffers(pool))
		}},
		{"minio", func(b *testing.B, pool objstore.BufferPool) objstore.Store {
			srv := minio.Start(b)
			return openBenchStore(b, fmt.Sprintf("s3://%s/bench?endpoint=%s&path_style=true&region=%s", srv.NewBucket(b), srv.Endpoint, srv.Region),
				objstore.StaticCredentials(srv.AccessKey, srv.SecretKey, ""), objstore.Buffers(pool), objstore.PartSize(storePartSize))
		}},
		{"fake-gcs", func(b *testing.B, pool objstore.BufferPool) objstore.Store {
			srv := fakegcs.Start(b)
			return openBenchStore(b, fmt.Sprintf("gs://%s/bench", srv.NewBucket()),
				objstore.Endpoint(srv.Endpoint), objstore.Buffers(pool), objstore.PartSize(storePartSize))
		}},
		{"azurite", func(b *testing.B, pool objstore.BufferPool) objstore.Store {
			srv := azurite.Start(b)
			b.Setenv(objstore.EnvAzureAccount, srv.Account)
			b.Setenv(objstore.EnvAzureKey, srv.Key)
			b.Setenv(objstore.EnvAzureSASToken, "")
			return openBenchStore(b, fmt.Sprintf("azblob://%s/bench", srv.NewContainer(b)),
				objstore.Endpoint(srv.Endpoint), objstore.Buffers(pool), objstore.PartSize(storePartSize))
		}},
	}
	for _, st := range stores {
		for _, f := range files {
			b.Run(st.name+"/"+f.name, func(b *testing.B) {
				pool := &peakPool{}
				store := st.open(b, pool)
				ctx := context.Background()
				b.SetBytes(int64(len(f.data)))
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					key := fmt.Sprintf("%s-%d.parquet", f.name, i)
					if err := uploadInWrites(ctx, store, key, f.data); err != nil {
						b.Fatal(err)
					}
					// Not timed: the emulators keep what they hold in
					// memory or on this machine's disk.
					b.StopTimer()
					if err := store.Delete(ctx, key); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
				}
				b.ReportMetric(float64(pool.peakBytes())/(1<<20), "pool-peak-MiB")
				b.ReportMetric(float64(len(f.data)), "file_bytes")
			})
		}
	}
}

// storeBenchFile is a Parquet file of the benchmark.
type storeBenchFile struct {
	name string
	data []byte
}

// storeBenchFiles writes the small and the large file: clickstream rows,
// pqsink's writer, ZSTD.
func storeBenchFiles(b *testing.B) []storeBenchFile {
	b.Helper()
	var out []storeBenchFile
	for _, f := range []struct {
		name string
		rows int
	}{{"small", 40_000}, {"large", 1_000_000}} {
		data := Clicks(f.rows)
		var buf bytes.Buffer
		write := pqsinkWriter(ClickSchema, func(g *rowgroup.RowGroup, w *writer.Writer) error { return writeClicks(g, w, data) })
		if err := write(&buf); err != nil {
			b.Fatal(err)
		}
		out = append(out, storeBenchFile{f.name, buf.Bytes()})
	}
	if len(out[0].data) >= storePartSize || len(out[1].data) <= 2*storePartSize {
		b.Fatalf("files of %d and %d bytes: want one under a part (%d) and one of several parts", len(out[0].data), len(out[1].data), storePartSize)
	}
	return out
}

// uploadInWrites streams data into a new object in storeWriteSize pieces
// and commits it.
func uploadInWrites(ctx context.Context, store objstore.Store, key string, data []byte) error {
	up, err := store.Create(ctx, key)
	if err != nil {
		return err
	}
	defer up.Abort(ctx)
	for off := 0; off < len(data); off += storeWriteSize {
		if _, err := up.Write(data[off:min(off+storeWriteSize, len(data))]); err != nil {
			return err
		}
	}
	_, err = up.Commit(ctx)
	return err
}

// openBenchStore opens a store that the benchmark closes when it ends.
func openBenchStore(b *testing.B, url string, opts ...objstore.Option) objstore.Store {
	b.Helper()
	s, err := objstore.Open(context.Background(), url, opts...)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

// peakPool is a BufferPool (and BufferReserver) that recycles buffers and
// keeps the most bytes lent and reserved at once.
type peakPool struct {
	mu         sync.Mutex
	free       [][]byte
	held, peak int
}

func (p *peakPool) Get(ctx context.Context, size int) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.add(size)
	for i, buf := range p.free {
		if cap(buf) >= size {
			p.free = append(p.free[:i], p.free[i+1:]...)
			return buf[:size], nil
		}
	}
	return make([]byte, size), nil
}

func (p *peakPool) Put(buf []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.held -= len(buf)
	p.free = append(p.free, buf)
}

// Drop forgets a buffer that a failed request may still read.
func (p *peakPool) Drop(buf []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.held -= len(buf)
}

func (p *peakPool) Reserve(ctx context.Context, n int) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.add(n)
	return nil
}

func (p *peakPool) Release(n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.held -= n
}

// add counts n more bytes out; p.mu is held.
func (p *peakPool) add(n int) {
	p.held += n
	p.peak = max(p.peak, p.held)
}

func (p *peakPool) peakBytes() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.peak
}
