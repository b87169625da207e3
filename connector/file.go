package connector

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	"github.com/pqsink/pqsink/archive"
	"github.com/pqsink/pqsink/connector/budget"
	"github.com/pqsink/pqsink/connector/tablecommit"
	"github.com/pqsink/pqsink/format"
	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/objstore"
	"github.com/pqsink/pqsink/schema"
	"github.com/pqsink/pqsink/writer"
)

// fileBuffers are what an open file holds in memory: its format's
// buffers (the row group being filled and the row builder over it) and its
// Parquet writer. They outlive a file: the next file of the same key
// (format.Decoder.BuffersKey) reuses them, buffers already grown.
type fileBuffers struct {
	*format.Buffers
	key any // the format's BuffersKey of the file they were made for

	// w is the Parquet writer of the file, taken from the sink's pool at
	// the file's first row group: a file whose rows are all still
	// buffered holds none, which is what keeps ten thousand open files
	// cheap.
	w *writer.Writer
}

// openFile is one file being written: a run of one path's records of one
// partition, streamed to an upload row group by row group.
type openFile struct {
	id          string // path identity
	key         string
	first, last int64 // offsets of the first and last record
	records     int64
	opened      time.Time
	deadline    time.Time // schedule rotation; zero when there is none
	up          objstore.Upload
	buf         *fileBuffers
	sinceCheck  int   // rows since the row group size was last checked
	sinceBytes  int64 // bytes of record values since then
	reserved    bool  // the row group's buffers were grown to its target
	times       tablecommit.RecordTimes
}

// flush encodes the buffered rows as the file's next row group, which
// goes out to the upload at once.
func (f *openFile) flush(pool *writerPool) error {
	return pool.encode(func() error { return f.flushHeld(pool) })
}

// flushHeld is flush for a caller that holds an encoding slot.
func (f *openFile) flushHeld(pool *writerPool) error {
	if f.buf.Group.NumRows() == 0 {
		return nil
	}
	if f.buf.w == nil {
		w, err := pool.get(f.buf.Schema, f.up)
		if err != nil {
			return fmt.Errorf("%s: %w", f.key, err)
		}
		f.buf.w = w
	}
	if err := f.buf.w.WriteRowGroup(f.buf.Group); err != nil {
		return fmt.Errorf("%s: row group: %w", f.key, err)
	}
	f.buf.Group.Reset()
	f.reserved = false
	return nil
}

// written is how many bytes of the file are out.
func (f *openFile) written() int64 {
	if f.buf.w == nil {
		return 0
	}
	return f.buf.w.Offset()
}

// close writes the rest of the file and its footer, with its Kafka range,
// and gives the writer back to the pool.
func (f *openFile) close(pool *writerPool, topic string, partition int32) (md *meta.FileMetaData, err error) {
	err = pool.encode(func() error {
		md, err = f.closeHeld(pool, topic, partition)
		return err
	})
	return md, err
}

// closeHeld is close for a caller that holds an encoding slot.
func (f *openFile) closeHeld(pool *writerPool, topic string, partition int32) (*meta.FileMetaData, error) {
	if err := f.flushHeld(pool); err != nil {
		return nil, err
	}
	w := f.buf.w
	if w == nil {
		return nil, fmt.Errorf("%s: a file without rows", f.key)
	}
	archive.Range{Topic: topic, Partition: partition, First: f.first, Last: f.last, Records: f.records}.Footer(w.SetKeyValue)
	for _, kv := range f.buf.KeyValues {
		w.SetKeyValue(kv[0], kv[1])
	}
	md, err := w.Close()
	if err != nil {
		return nil, fmt.Errorf("%s: footer: %w", f.key, err)
	}
	f.buf.w = nil
	pool.put(f.buf.Schema, w)
	return md, nil
}

// writerPool keeps the Parquet writers of finished files for the next
// ones: a writer's column writers hold grown buffers and dictionary
// tables, costly to build for every file and too large to keep one per
// open file. It also bounds how many row groups are encoded at once: when
// ten thousand partitions finish their files together (a shutdown), they
// take turns, and a few writers serve them all instead of ten thousand
// being built at once. Safe for concurrent use.
type writerPool struct {
	opts  []writer.Option
	slots chan struct{}  // encoding slots: a row group or a footer being written
	mem   *budget.Budget // counts the idle writers' memory and the scratch

	// scratch is the working memory of encoding, shared by all writers:
	// as many sets as row groups are encoded at once, where writers of
	// their own kept one per column of every open file.
	scratch *writer.Scratch

	mu      sync.Mutex
	idle    []pooledWriter // most recently put last
	counted int64          // of the scratch, in the budget
}

type pooledWriter struct {
	schema *schema.Schema
	w      *writer.Writer
	held   int64 // counted in the budget while idle
}

// maxIdleWriters bounds the pool: about as many files finish at once as
// partitions are handled at once.
const maxIdleWriters = 16

func newWriterPool(opts []writer.Option, slots int, mem *budget.Budget) *writerPool {
	scratch := writer.NewScratch()
	opts = append(slices.Clip(opts), writer.SharedScratch(scratch))
	return &writerPool{opts: opts, slots: make(chan struct{}, slots), mem: mem, scratch: scratch}
}

// encode runs fn, which encodes a row group or a footer, in an encoding
// slot, waiting for one: encoding is CPU work of a bounded size, so the
// wait is short. fn runs on a goroutine of its own, whose stack, grown by
// the encoders' deep calls, goes away with it: ten thousand partition
// goroutines that each grew one would hold hundreds of megabytes.
func (p *writerPool) encode(fn func() error) error {
	p.slots <- struct{}{}
	defer func() { <-p.slots }()
	done := make(chan error, 1)
	go func() { done <- fn() }()
	err := <-done
	p.countScratch()
	return err
}

// close gives back what the pool counts, when nothing encodes any more:
// the idle writers and the scratch.
func (p *writerPool) close() {
	p.drain()
	p.mu.Lock()
	n := p.counted
	p.counted = 0
	p.mu.Unlock()
	p.mem.Add(-n)
}

// countScratch brings the budget up to date with what the scratch holds.
func (p *writerPool) countScratch() {
	p.mu.Lock()
	n := p.scratch.Held()
	d := n - p.counted
	p.counted = n
	p.mu.Unlock()
	if d != 0 {
		p.mem.Add(d)
	}
}

// get returns a writer of schema s that starts a file on out.
func (p *writerPool) get(s *schema.Schema, out io.Writer) (*writer.Writer, error) {
	p.mu.Lock()
	for i := len(p.idle) - 1; i >= 0; i-- {
		if p.idle[i].schema == s {
			w, held := p.idle[i].w, p.idle[i].held
			p.idle = append(p.idle[:i], p.idle[i+1:]...)
			p.mu.Unlock()
			p.mem.Add(-held) // the file that takes it counts it now
			return w, w.Reset(out)
		}
	}
	p.mu.Unlock()
	return writer.New(out, s, p.opts...)
}

// put gives back the writer of a closed file.
func (p *writerPool) put(s *schema.Schema, w *writer.Writer) {
	held := w.Held()
	p.mem.Add(held)
	p.mu.Lock()
	var evicted int64
	if len(p.idle) == maxIdleWriters {
		evicted = p.idle[0].held
		p.idle = append(p.idle[:0], p.idle[1:]...)
	}
	p.idle = append(p.idle, pooledWriter{s, w, held})
	p.mu.Unlock()
	if evicted > 0 {
		p.mem.Add(-evicted)
	}
}

// drain drops the idle writers, under memory pressure, and returns the
// bytes it gave back.
func (p *writerPool) drain() int64 {
	p.mu.Lock()
	var n int64
	for _, e := range p.idle {
		n += e.held
	}
	p.idle = nil
	p.mu.Unlock()
	if n > 0 {
		p.mem.Add(-n)
	}
	return n
}

// abort discards the upload; nothing of the file is left in the store.
func (f *openFile) abort(ctx context.Context) error {
	if f.up == nil {
		return nil
	}
	err := f.up.Abort(ctx)
	f.up = nil
	return err
}
