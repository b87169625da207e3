package fetch

import (
	"errors"
	"io"
	"sync"
	"time"
	"unsafe"

	"github.com/segmentio/kafka-go"

	"github.com/pqsink/pqsink/rowgroup"
)

// Record is one fetched Kafka record. Its key, value and header values
// are the fetch's own: never reused, so a partition may keep them. A null
// key or value is nil, an empty one empty but not nil.
type Record struct {
	Offset  int64
	Time    time.Time
	Key     []byte
	Value   []byte
	Headers []rowgroup.Header
}

// Fetcher is one partition's end of the fetch multiplexer (Mux):
// records pile up in a buffer that the partition takes whole when it is
// ready, so a busy partition pays one hand-over per batch, not per record,
// and an idle one sees each record at once.
//
// Fetches use kafka-go's protocol-level fetch request rather than its
// Reader: the Reader turns an empty key or header value into nil, and
// replay must be able to restore a record exactly.
type Fetcher struct {
	mu    sync.Mutex
	buf   []Record
	spare []Record      // an emptied buf given back by the partition, for the next one
	bytes int64         // of the keys and values in buf
	ready chan struct{} // signalled when buf has records

	mem    Budget
	detach func() // set by the fetch multiplexer: stop fetching this partition
	wake   func() // called after ready is signalled: the partition has work
	took   func() // called after the partition took buf: it has room for a fetch
}

// newFetcher returns an empty fetcher buffer; wake tells its partition
// that it has work, and took tells whoever fills it that it has room.
func newFetcher(mem Budget, wake, took func()) *Fetcher {
	return &Fetcher{ready: make(chan struct{}, 1), mem: mem, wake: wake, took: took}
}

// recordOverhead is what a fetched record costs beside its key and value:
// its entry in the fetcher's buffer and in the slice that takes over from
// it.
const recordOverhead = 2 * int64(unsafe.Sizeof(Record{}))

// arenaSize is the size of the blocks that hold fetched keys and values:
// one allocation for many records, instead of one per record.
const arenaSize = 1 << 20

// minArenaBlock is the size of a partition's first arena block.
const minArenaBlock = 2 << 10

// readRecords decodes a fetched record set from offset *next on, moving
// *next past the last record, and returns batch with the records appended
// and the bytes they hold. Keys and values are copied into the arena.
func readRecords(rs kafka.RecordReader, next *int64, arena *[]byte, batch []Record) ([]Record, int64, error) {
	defer closeRecords(rs)
	var size int64
	for {
		r, err := rs.ReadRecord()
		if errors.Is(err, io.EOF) {
			return batch, size, nil
		}
		if err != nil {
			clear(batch)
			return batch[:0], 0, err
		}
		if r.Offset < *next {
			continue // a batch may start before the requested offset
		}
		rec := Record{Offset: r.Offset, Time: r.Time}
		// The batch counts every block it starts, whole: a block's unused
		// tail is memory too.
		rec.Key = readBytes(r.Key, arena, &size)
		rec.Value = readBytes(r.Value, arena, &size)
		if len(r.Headers) > 0 {
			rec.Headers = make([]rowgroup.Header, len(r.Headers))
			for i, h := range r.Headers {
				rec.Headers[i].Key = h.Key
				rec.Headers[i].Value = copyBytes(h.Value, arena, &size)
			}
		}
		batch = append(batch, rec)
		size += recordOverhead
		*next = r.Offset + 1
	}
}

// deliver hands a fetched batch to the partition. It returns an empty
// slice for the next batch and the bytes the partition has not taken.
// When the partition has taken everything, the batch becomes its buffer
// as it is: records are not copied from slice to slice.
func (f *Fetcher) deliver(batch []Record, size int64) ([]Record, int64) {
	f.mu.Lock()
	if len(f.buf) == 0 {
		next := f.buf[:0]
		if cap(next) == 0 {
			// The partition gave its last slice back after it took.
			next, f.spare = f.spare, nil
		}
		f.buf, batch = batch, next
	} else {
		f.buf = append(f.buf, batch...)
		clear(batch)
		batch = batch[:0]
	}
	f.bytes += size
	n := f.bytes
	f.mu.Unlock()
	select {
	case f.ready <- struct{}{}:
	default:
	}
	if f.wake != nil {
		f.wake()
	}
	return batch, n
}

// Buffered is the bytes the partition has not taken yet.
func (f *Fetcher) Buffered() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.bytes
}

// readBytes reads a record's key or value into the arena; a null one
// stays nil, an empty one is empty but not nil. It adds the bytes of any
// block it allocates to *allocated.
func readBytes(b kafka.Bytes, arena *[]byte, allocated *int64) []byte {
	if b == nil {
		return nil
	}
	dst := alloc(b.Len(), arena, allocated)
	io.ReadFull(b, dst)
	return dst
}

// copyBytes copies a header value into the arena, keeping nil apart from
// empty.
func copyBytes(v []byte, arena *[]byte, allocated *int64) []byte {
	if v == nil {
		return nil
	}
	dst := alloc(len(v), arena, allocated)
	copy(dst, v)
	return dst
}

// alloc takes n bytes from the arena, starting a new block when it is
// full, and adds the bytes of a new block to *allocated. Earlier slices
// stay valid: a block is never moved. Blocks start small and double up to
// arenaSize, so that a partition that receives little holds little: ten
// thousand quiet partitions with a megabyte block each would be ten
// gigabytes of heap to the garbage collector.
func alloc(n int, arena *[]byte, allocated *int64) []byte {
	if n == 0 {
		// Not a slice of the arena: before its first block, that would be
		// nil, and an empty key would read as a null one.
		return []byte{}
	}
	if n > arenaSize/4 {
		*allocated += int64(n)
		return make([]byte, n)
	}
	a := *arena
	if cap(a)-len(a) < n {
		size := min(arenaSize, max(minArenaBlock, 2*cap(a)))
		for size < n {
			size *= 2
		}
		a = make([]byte, 0, size)
		*allocated += int64(size)
	}
	start := len(a)
	a = a[:start+n]
	*arena = a
	return a[start : start+n : start+n]
}

func closeRecords(r kafka.RecordReader) {
	if c, ok := r.(io.Closer); ok {
		c.Close()
	}
}

// Take returns the records fetched since the last take, and the bytes of
// the budget they hold, which the caller releases once it is done with
// them.
func (f *Fetcher) Take() ([]Record, int64) {
	f.mu.Lock()
	b, n := f.buf, f.bytes
	f.buf, f.spare = f.spare, nil
	f.bytes = 0
	f.mu.Unlock()
	if f.took != nil {
		f.took()
	}
	return b, n
}

// GiveBack returns a slice that Take returned, once the partition is
// done with its records, to hold later ones: a busy partition then fetches
// without allocating slices of records. A slice much larger than the
// records it held is dropped instead, so that a partition that once
// received a burst does not keep room for it.
func (f *Fetcher) GiveBack(b []Record) {
	if cap(b) > 4*max(len(b), 64) {
		return
	}
	clear(b) // the records' bytes are not kept alive by an unused slice
	f.mu.Lock()
	if f.spare == nil {
		f.spare = b[:0]
	}
	f.mu.Unlock()
}

// Stop ends the fetch and releases what it held: once it returns, no
// more records arrive.
func (f *Fetcher) Stop() {
	if f.detach != nil {
		f.detach()
	}
	f.mu.Lock()
	n := f.bytes
	f.buf, f.spare, f.bytes = nil, nil, 0
	f.mu.Unlock()
	f.mem.Add(-n)
}

// Ready is signalled when records arrive: Take has some.
func (f *Fetcher) Ready() <-chan struct{} { return f.ready }
