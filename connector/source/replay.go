package source

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"github.com/pqsink/pqsink/internal/kafkaauth"
	"github.com/pqsink/pqsink/internal/kafkaconn"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/protocol"
	"github.com/segmentio/kafka-go/protocol/metadata"

	"github.com/pqsink/pqsink/archive"
	"github.com/pqsink/pqsink/config"
	"github.com/pqsink/pqsink/format"
	"github.com/pqsink/pqsink/format/all"
	"github.com/pqsink/pqsink/internal/schemaregistry/registryconfig"
	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/objstore"
	"github.com/pqsink/pqsink/objstore/fromconfig"
)

// ErrInterrupted is wrapped by the error of a replay stopped by its context
// (SIGINT, SIGTERM): what was produced is acknowledged and in the
// checkpoint, and a rerun with the checkpoint goes on from there.
var ErrInterrupted = errors.New("replay interrupted")

// Stats are a replay's counters. They are safe to read while it runs.
type Stats struct {
	// Records is the number of records produced and acknowledged.
	Records atomic.Int64
	// FilesListed counts the objects under the prefix that have the
	// replay's suffix (outside _pqsink/).
	FilesListed atomic.Int64
	// FootersRead counts the objects whose footer was read while planning,
	// because their key does not match the path template.
	FootersRead atomic.Int64
	// FilesOpened counts every opening of an object (footer reads while
	// planning included).
	FilesOpened atomic.Int64
	// FilesSkipped counts the objects ruled out by key, footer,
	// statistics or a table's manifest (FilesPrunedByManifest).
	FilesSkipped atomic.Int64
	// FilesPrunedByManifest counts the objects that their Bounds (a
	// table's manifest) ruled out and that were therefore never opened,
	// though their key did not rule them out. They are counted in
	// FilesSkipped too.
	FilesPrunedByManifest atomic.Int64
	// RowGroupsSkipped counts the row groups ruled out by statistics.
	RowGroupsSkipped atomic.Int64
	// RowGroupsByRows counts the row groups read through reader.Rows
	// rather than column by column.
	RowGroupsByRows atomic.Int64
	// EnvelopesRead counts the files of a table without the sink's footer
	// metadata, placed by reading their _kafka columns while planning.
	EnvelopesRead atomic.Int64
	// FootersLent counts those of them whose records are produced with the
	// schema in the footer of one of the sink's files with the same
	// columns (Avro, Protobuf, JSON Schema).
	FootersLent atomic.Int64
	// BytesDone is the size of the planned files read to the end.
	BytesDone atomic.Int64
	// RecordsDeleted counts the records passed over because their table
	// deleted them (Object.Deleted).
	RecordsDeleted atomic.Int64
}

// Replayer produces the records of archived files to a topic. Make one with
// New, call Run once, then Close.
type Replayer struct {
	opts        Options
	cfg         *config.Config
	store       objstore.Store
	ownStore    bool
	producer    Producer
	ownProducer bool
	registry    SchemaRegistrar
	keys        *archive.Template
	ckpt        checkpointer
	ck          *ckState // while Run runs
	// replayers are the formats' replay sides, in the order they are
	// asked whether a file is theirs.
	replayers []format.Replayer
	stats     Stats
	// deleted are the deleted rows of Options.Files, by key.
	deleted map[string]Deletions
	// bounds are the Bounds of Options.Files, by key.
	bounds map[string]*Bounds
}

// replayerOf returns the format's replay side that claims a file of
// footer entries kv, or nil: its records are the sink's JSON, Avro's, JSON
// Schema's or raw bytes.
func (r *Replayer) replayerOf(kv []meta.KeyValue) format.Replayer {
	for _, rp := range r.replayers {
		if rp.Claims(kv) != "" {
			return rp
		}
	}
	return nil
}

// New prepares a replay of opts with the kafka, store and format.registry
// sections of cfg. It opens the store and checks the target topic (it must
// exist and, unless KeyHash, have as many partitions as the sources need,
// which Run checks once it knows them).
func New(ctx context.Context, cfg *config.Config, opts Options) (*Replayer, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	r := &Replayer{opts: o, cfg: cfg}
	for _, f := range o.Files {
		if f.Deleted != nil {
			if r.deleted == nil {
				r.deleted = map[string]Deletions{}
			}
			r.deleted[f.Key] = f.Deleted
		}
		if f.Bounds != nil {
			if r.bounds == nil {
				r.bounds = map[string]*Bounds{}
			}
			r.bounds[f.Key] = f.Bounds
		}
	}
	if r.keys, err = archive.Parse(o.PathTemplate, false); err != nil {
		return nil, fmt.Errorf("replay: path: %w", err)
	}
	r.store = o.Store
	if r.store == nil {
		url := o.From
		if o.StoreURL != "" {
			url = o.StoreURL
		}
		if r.store, err = openStore(ctx, url, &cfg.Store); err != nil {
			return nil, err
		}
		r.ownStore = true
	}
	r.registry = o.Registry
	if r.registry == nil && cfg.Format.Registry != nil && cfg.Format.Registry.URL != "" {
		reg, err := registryconfig.New(cfg.Format.Registry)
		if err != nil {
			r.Close()
			return nil, err
		}
		r.registry = reg
	}
	formats := o.Formats
	if formats == nil {
		formats = all.Formats()
	}
	r.replayers = formats.Replayers(cfg, format.ReplayEnv{Log: o.Log, Registry: r.registry, Subject: o.Subject})
	switch {
	case o.Checkpoint != "":
		r.ckpt = fileCheckpoint{path: o.Checkpoint}
	case o.StoreCheckpoint != "":
		r.ckpt = &storeCheckpoint{store: r.store, dir: archive.ReplayPrefix + o.StoreCheckpoint + "/"}
	}
	r.producer = o.Producer
	if r.producer == nil {
		if r.producer, err = newProducer(&cfg.Kafka, o); err != nil {
			r.Close()
			return nil, err
		}
		r.ownProducer = true
	}
	return r, nil
}

// Close releases the store and the producer that New opened.
func (r *Replayer) Close() error {
	var errs []error
	if r.ownProducer && r.producer != nil {
		errs = append(errs, r.producer.Close())
	}
	if r.ownStore && r.store != nil {
		errs = append(errs, r.store.Close())
	}
	return errors.Join(errs...)
}

// Stats returns the replay's counters.
func (r *Replayer) Stats() *Stats { return &r.stats }

// openStore opens the store of the --from URL (s3://, gs://, azblob://,
// abfss:// or file://) with the config's store settings (endpoint,
// region, credentials).
func openStore(ctx context.Context, from string, c *config.Store) (objstore.Store, error) {
	s, err := fromconfig.Open(ctx, from, c)
	if err != nil {
		return nil, fmt.Errorf("replay: --from: %w", err)
	}
	return s, nil
}

// newProducer makes the producer of the target topic: for records that
// keep their partition number, a partitionProducer; for --partitioning
// hash, kafka-go's Writer with the murmur2 balancer.
func newProducer(k *config.Kafka, o Options) (Producer, error) {
	mech, err := kafkaauth.SASL(k.SASL)
	if err != nil {
		return nil, err
	}
	tc, err := kafkaauth.TLS(k.TLS)
	if err != nil {
		return nil, err
	}
	transport := &kafka.Transport{ClientID: k.ClientID, SASL: mech, TLS: tc, DialTimeout: 10 * time.Second}
	if tc == nil {
		// Under TLS a server that is no broker fails the handshake.
		transport.Dial = kafkaconn.Dialer(transport.DialTimeout)
	}
	if o.KeyHash {
		return &hashWriter{Writer: newWriter(k, o, transport), transport: transport}, nil
	}
	log := o.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	// kafka-go's Writer's defaults: 10 attempts, backoff 100 ms to 1 s,
	// 10 s per request.
	return &partitionProducer{client: &kafka.Client{Addr: kafka.TCP(k.Brokers...), Transport: transport}, transport: transport,
		topic: o.Topic, maxAttempts: 10, backoffMin: 100 * time.Millisecond, backoffMax: time.Second, timeout: 10 * time.Second,
		log: log}, nil
}

// hashWriter is the Writer of --partitioning hash with the transport it
// produces through, which Writer.Close leaves open (it closes only a
// transport of its own): an open one refreshes its brokers' metadata for
// the life of the process.
type hashWriter struct {
	*kafka.Writer
	transport *kafka.Transport
}

// Close flushes and closes the Writer, then its transport.
func (w *hashWriter) Close() error {
	err := w.Writer.Close()
	w.transport.CloseIdleConnections()
	return err
}

// newWriter makes the kafka-go Writer of the target topic for
// --partitioning hash: each message to murmur2 of its key.
func newWriter(k *config.Kafka, o Options, transport *kafka.Transport) *kafka.Writer {
	return &kafka.Writer{
		Addr:     kafka.TCP(k.Brokers...),
		Topic:    o.Topic,
		Balancer: &kafka.Murmur2Balancer{},
		// kafka-go allocates room for BatchSize messages per record batch,
		// and BatchBytes cuts batches of the reference records at about
		// 4,500: a larger BatchSize only zeroes memory that is not used.
		BatchSize:    min(o.BatchRecords, 2048),
		BatchBytes:   maxRequestBytes,
		BatchTimeout: time.Millisecond,
		RequiredAcks: kafka.RequireAll,
		MaxAttempts:  10,
		Transport:    &topicMetadataCache{RoundTripper: transport, topic: o.Topic},
	}
}

// topicMetadataCache answers the metadata requests for the target topic
// from a copy at most metadataTTL old. kafka-go's Writer asks for the
// topic's partition count once per message; its Transport caches the
// answer, but filters a fresh copy of it each time, which cost a few
// allocations per record and an eighth of the CPU of a replay. The answer is
// only read, so one copy serves every caller. A hit takes no lock, and
// reads the clock once in clockEvery hits: a replay's producers ask for
// the count thousands of times a second, and reading the clock each time
// was 2% of a replay's CPU.
type topicMetadataCache struct {
	kafka.RoundTripper
	topic string

	cached atomic.Pointer[cachedMetadata]
	hits   atomic.Uint32
}

// cachedMetadata is an answer and when it came.
type cachedMetadata struct {
	resp protocol.Message
	at   time.Time
}

// metadataTTL bounds how stale the cached partition count may be: an
// answer is used for metadataTTL, and then for at most clockEvery-1 more
// requests until the next look at the clock.
const (
	metadataTTL = time.Second
	clockEvery  = 64
)

// RoundTrip sends req, unless it is a metadata request for the target
// topic alone and a recent answer is at hand.
func (c *topicMetadataCache) RoundTrip(ctx context.Context, addr net.Addr, req protocol.Message) (protocol.Message, error) {
	m, ok := req.(*metadata.Request)
	if !ok || len(m.TopicNames) != 1 || m.TopicNames[0] != c.topic {
		return c.RoundTripper.RoundTrip(ctx, addr, req)
	}
	if e := c.cached.Load(); e != nil && (c.hits.Add(1)%clockEvery != 0 || time.Since(e.at) < metadataTTL) {
		return e.resp, nil
	}
	resp, err := c.RoundTripper.RoundTrip(ctx, addr, req)
	if err == nil {
		c.cached.Store(&cachedMetadata{resp: resp, at: time.Now()})
	}
	return resp, err
}

// checkTarget checks that the target topic exists with the partitions the
// sources need, when records keep their partition number.
func (r *Replayer) checkTarget(ctx context.Context, parts []*partitionPlan) error {
	pp, ok := r.producer.(*partitionProducer)
	if !ok || r.opts.KeyHash {
		return nil
	}
	client := &kafka.Client{Addr: pp.client.Addr, Transport: pp.transport, Timeout: 30 * time.Second}
	md, err := client.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{r.opts.Topic}})
	if err != nil {
		return fmt.Errorf("replay: target topic %s: %w", r.opts.Topic, err)
	}
	if len(md.Topics) != 1 || md.Topics[0].Error != nil {
		var terr error
		if len(md.Topics) == 1 {
			terr = md.Topics[0].Error
		}
		return fmt.Errorf("replay: target topic %s: %v (create it first, with at least as many partitions as the sources)", r.opts.Topic, terr)
	}
	n := int32(len(md.Topics[0].Partitions))
	for _, p := range parts {
		if p.partition >= n {
			return fmt.Errorf("replay: source partition %s has no partition %d in target topic %s (%d partitions); add partitions or use --partitioning hash", p.name(), p.partition, r.opts.Topic, n)
		}
	}
	return nil
}

// Run replays every matching record, then returns nil; or returns the
// first error, or an error wrapping ErrInterrupted when ctx ends. Either
// way the checkpoint holds every acknowledged record.
func (r *Replayer) Run(ctx context.Context) error {
	o := &r.opts
	ck := &Checkpoint{Version: 1, From: o.From, Topic: o.Topic, Filter: o.filterText(), Partitions: map[string]Position{}}
	if r.ckpt != nil {
		old, err := r.ckpt.load(ctx)
		if err != nil {
			return err
		}
		if old != nil {
			if old.From != ck.From || old.Topic != ck.Topic || old.Filter != ck.Filter {
				return fmt.Errorf("checkpoint %s belongs to another replay (from %s to topic %s, %s); remove it or give another checkpoint",
					r.ckpt, old.From, old.Topic, old.Filter)
			}
			ck = old
			ck.Complete = false
			o.Log.Info("resuming from checkpoint", "checkpoint", r.ckpt.String(), "records", ck.Records, "partitions", len(ck.Partitions))
		}
	}
	done := map[string]int64{}
	for k, p := range ck.Partitions {
		done[k] = p.Offset
	}
	parts, err := r.plan(ctx, done)
	if err != nil {
		return err
	}
	var total int64
	for _, p := range parts {
		total += p.bytes
	}
	o.Log.Info("replay planned", "from", o.From, "topic", o.Topic, "partitions", len(parts),
		"files_listed", r.stats.FilesListed.Load(), "files_skipped", r.stats.FilesSkipped.Load(),
		"files_pruned_by_manifest", r.stats.FilesPrunedByManifest.Load(), "bytes", total)
	if err := r.checkTarget(ctx, parts); err != nil {
		return err
	}

	prog := r.startProgress(ctx, total)
	defer prog.finish()

	// Workers replay partitions, several at once. Each has a pipeline: the
	// worker fills batches, a producer goroutine writes them in order, so
	// that a partition, always replayed by one worker, keeps its order.
	r.ck = &ckState{ck: ck, last: time.Now()}
	queue := make(chan *partitionPlan, len(parts))
	for _, p := range parts {
		queue <- p
	}
	close(queue)
	workers := max(1, min(o.Parallelism, len(parts)))
	wctx, stopWorkers := context.WithCancel(ctx)
	defer stopWorkers()
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pr := newPipeline(r)
			defer pr.stop()
			var err error
			for p := range queue {
				last, ok := done[p.name()]
				if !ok {
					last = -1
				}
				if err = r.replayPartition(wctx, p, last, pr); err != nil {
					break
				}
			}
			if err == nil {
				err = pr.flush()
			}
			if werr := pr.close(); err == nil {
				err = werr
			}
			if err != nil {
				errs[w] = err
				stopWorkers() // the others stop too
			}
		}()
	}
	wg.Wait()
	var runErr error
	for _, err := range errs {
		if err != nil && (runErr == nil || errors.Is(runErr, context.Canceled)) {
			runErr = err
		}
	}
	interrupted := ctx.Err() != nil && (runErr == nil || errors.Is(runErr, context.Canceled) || errors.Is(runErr, context.DeadlineExceeded))
	if runErr == nil && !interrupted {
		ck.Complete = true
	}
	saveCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if err := r.saveCheckpoint(saveCtx); err != nil && runErr == nil {
		runErr = err
	}
	switch {
	case interrupted:
		return fmt.Errorf("%w after %d records; the checkpoint %v holds the position", ErrInterrupted, r.stats.Records.Load(), r.ckpt)
	case runErr != nil:
		return runErr
	}
	elapsed := prog.now().Sub(prog.start)
	o.Log.Info("replay finished", "records", r.stats.Records.Load(), "seconds", fmt.Sprintf("%.1f", elapsed.Seconds()),
		"records_per_s", int64(float64(r.stats.Records.Load())/max(elapsed.Seconds(), 1e-9)), "files_opened", r.stats.FilesOpened.Load(),
		"files_skipped", r.stats.FilesSkipped.Load(), "files_pruned_by_manifest", r.stats.FilesPrunedByManifest.Load(),
		"row_groups_skipped", r.stats.RowGroupsSkipped.Load(),
		"rewritten_files", r.stats.EnvelopesRead.Load(), "schemas_lent", r.stats.FootersLent.Load())
	return nil
}

// replayPartition produces the records of one source partition after done,
// merging its files by offset.
func (r *Replayer) replayPartition(ctx context.Context, p *partitionPlan, done int64, pr *pipeline) error {
	h := &streamHeap{}
	defer func() {
		for _, s := range *h {
			s.close()
		}
	}()
	next := 0
	name := p.name()
	for n := 0; ; n++ {
		if n%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		// Open every file that may hold a record before the smallest
		// offset at hand.
		for next < len(p.files) && (h.Len() == 0 || p.files[next].first <= (*h)[0].offset) {
			f := p.files[next]
			next++
			s, err := r.openStream(ctx, f, name, done)
			if err != nil {
				return err
			}
			if s == nil {
				r.stats.BytesDone.Add(f.size)
				continue
			}
			ok, err := s.peek(done)
			if err != nil {
				s.close()
				return err
			}
			if !ok {
				s.close()
				r.stats.BytesDone.Add(f.size)
				continue
			}
			heap.Push(h, s)
		}
		if h.Len() == 0 {
			return nil
		}
		s := (*h)[0]
		b, err := pr.current(ctx)
		if err != nil {
			return err
		}
		if err := s.emit(b); err != nil {
			return err
		}
		ok, err := s.peek(done)
		if err != nil {
			return err
		}
		if ok {
			heap.Fix(h, 0)
		} else {
			heap.Pop(h)
			s.close()
			r.stats.BytesDone.Add(s.ref.size)
		}
	}
}

// streamHeap orders open files by their next offset.
type streamHeap []*fileStream

func (h streamHeap) Len() int           { return len(h) }
func (h streamHeap) Less(i, j int) bool { return h[i].offset < h[j].offset }
func (h streamHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *streamHeap) Push(x any)        { *h = append(*h, x.(*fileStream)) }
func (h *streamHeap) Pop() any {
	old := *h
	s := old[len(old)-1]
	*h = old[:len(old)-1]
	return s
}

// pipeline hands full batches to a producer goroutine, keeps at most two
// in flight, and moves the checkpoint as batches are acknowledged.
type pipeline struct {
	r       *Replayer
	cur     *batch
	free    chan *batch
	full    chan *batch
	done    chan error
	ctx     context.Context // the producer's: not canceled by a signal
	cancel  context.CancelFunc
	stopped bool
	err     atomic.Pointer[error]
}

func newPipeline(r *Replayer) *pipeline {
	ctx, cancel := context.WithCancel(context.Background())
	p := &pipeline{r: r, free: make(chan *batch, 3), full: make(chan *batch, 1), done: make(chan error, 1),
		ctx: ctx, cancel: cancel}
	for range 3 {
		p.free <- &batch{msgs: make([]kafka.Message, 0, r.opts.BatchRecords), arena: make([]byte, 0, 256*r.opts.BatchRecords)}
	}
	go p.produce()
	return p
}

// current returns the batch being filled, handing it over and taking a
// free one when it is full.
func (p *pipeline) current(ctx context.Context) (*batch, error) {
	if p.cur != nil && len(p.cur.msgs) < p.r.opts.BatchRecords {
		return p.cur, nil
	}
	if err := p.err.Load(); err != nil {
		return nil, *err
	}
	if p.cur != nil {
		if err := p.send(ctx); err != nil {
			return nil, err
		}
	}
	select {
	case b := <-p.free:
		p.cur = b
		return b, nil
	case err := <-p.done:
		p.done <- err
		return nil, p.failure(err)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (p *pipeline) failure(err error) error {
	if err == nil {
		return errors.New("replay: producer stopped")
	}
	return err
}

// send hands the current batch to the producer.
func (p *pipeline) send(ctx context.Context) error {
	b := p.cur
	p.cur = nil
	if len(b.msgs) == 0 {
		p.free <- b
		return nil
	}
	select {
	case p.full <- b:
		return nil
	case err := <-p.done:
		p.done <- err
		return p.failure(err)
	case <-ctx.Done():
		p.free <- b // never sent: its records are not produced
		return ctx.Err()
	}
}

// flush sends the batch being filled.
func (p *pipeline) flush() error {
	if p.cur == nil {
		return nil
	}
	return p.send(context.Background())
}

// close waits for the batches sent to be acknowledged (or to fail).
func (p *pipeline) close() error {
	if p.stopped {
		return nil
	}
	p.stopped = true
	close(p.full)
	return <-p.done
}

// stop ends the producer goroutine if close was not called.
func (p *pipeline) stop() {
	if !p.stopped {
		p.close()
	}
	p.cancel()
}

// produce writes the batches in order. A batch that fails stops it: later
// batches are not written, so the checkpoint never passes a record that
// was not acknowledged.
func (p *pipeline) produce() {
	var err error
	for b := range p.full {
		if err == nil {
			wctx, cancel := context.WithTimeout(p.ctx, 2*time.Minute)
			err = p.r.producer.WriteMessages(wctx, b.msgs...)
			cancel()
			if err != nil {
				err = fmt.Errorf("producing to %s: %w", p.r.opts.Topic, summarize(err))
				p.err.Store(&err)
			} else {
				p.acknowledged(b)
			}
		}
		b.reset()
		p.free <- b
	}
	p.done <- err
}

// ckState is the checkpoint that the workers' pipelines move on.
type ckState struct {
	mu   sync.Mutex
	ck   *Checkpoint
	last time.Time // of the last save
}

// acknowledged moves the checkpoint past batch b, and saves it when the
// interval has passed.
func (p *pipeline) acknowledged(b *batch) {
	r := p.r
	r.stats.Records.Add(int64(len(b.msgs)))
	st := r.ck
	st.mu.Lock()
	defer st.mu.Unlock()
	st.ck.Records += int64(len(b.msgs))
	for _, m := range b.marks {
		st.ck.Partitions[m.part] = Position{Object: m.object, Row: m.row, Offset: m.offset}
	}
	if r.ckpt != nil && time.Since(st.last) >= r.opts.CheckpointInterval {
		if err := r.ckpt.save(p.ctx, st.ck); err != nil {
			r.opts.Log.Warn("checkpoint not saved", "checkpoint", r.ckpt.String(), "err", err)
		}
		st.last = time.Now()
	}
}

// saveCheckpoint writes the checkpoint; the producers must have stopped.
func (r *Replayer) saveCheckpoint(ctx context.Context) error {
	if r.ckpt == nil {
		return nil
	}
	r.ck.mu.Lock()
	defer r.ck.mu.Unlock()
	if err := r.ckpt.save(ctx, r.ck.ck); err != nil {
		return err
	}
	r.opts.Log.Info("checkpoint saved", "checkpoint", r.ckpt.String(), "records", r.ck.ck.Records, "complete", r.ck.ck.Complete)
	return nil
}

// summarize shortens kafka-go's WriteErrors, one error per message, to the
// count and the first one.
func summarize(err error) error {
	var we kafka.WriteErrors
	if !errors.As(err, &we) {
		return err
	}
	failed := 0
	var first error
	for _, e := range we {
		if e != nil {
			failed++
			if first == nil {
				first = e
			}
		}
	}
	if first == nil {
		return err
	}
	return fmt.Errorf("%d of %d messages failed, the first with: %w", failed, len(we), first)
}
