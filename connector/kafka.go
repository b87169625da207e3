package connector

import (
	"context"
	"errors"
	"fmt"
	"github.com/pqsink/pqsink/internal/kafkaauth"
	"github.com/pqsink/pqsink/internal/kafkaconn"
	"io"
	"sync"
	"time"
	"unsafe"

	"github.com/segmentio/kafka-go"

	"github.com/pqsink/pqsink/config"
	"github.com/pqsink/pqsink/rowgroup"
)

// errGenerationOver is a commit refused because the group moved on to a
// new generation: the partition is no longer ours to commit.
var errGenerationOver = errors.New("consumer group generation is over")

// kafkaClients are the connections to Kafka: the client of the group
// protocol, fetches, offset commits and metadata, and its transport.
type kafkaClients struct {
	client    *kafka.Client
	transport *kafka.Transport
}

// close closes the transport's connections and stops its metadata
// refreshes: a transport left open keeps asking its brokers for metadata
// every few seconds for the life of the process, and, should another
// server take a gone broker's port, reads that server's bytes as a
// response (kafka-go sizes arrays by the counts it reads, so an HTTP
// reply can cost gigabytes).
func (k *kafkaClients) close() { k.transport.CloseIdleConnections() }

func newKafkaClients(c *config.Kafka) (*kafkaClients, error) {
	mech, err := kafkaauth.SASL(c.SASL)
	if err != nil {
		return nil, err
	}
	tc, err := kafkaauth.TLS(c.TLS)
	if err != nil {
		return nil, err
	}
	transport := &kafka.Transport{ClientID: c.ClientID, SASL: mech, TLS: tc, DialTimeout: 10 * time.Second}
	if tc == nil {
		// Under TLS a server that is no broker fails the handshake.
		transport.Dial = kafkaconn.Dialer(transport.DialTimeout)
	}
	client := &kafka.Client{Addr: kafka.TCP(c.Brokers...), Timeout: c.CommitTimeout, Transport: transport}
	return &kafkaClients{client: client, transport: transport}, nil
}

// fetcher is one partition's end of the fetch multiplexer (fetchmux.go):
// records pile up in a buffer that the partition takes whole when it is
// ready, so a busy partition pays one hand-over per batch, not per record,
// and an idle one sees each record at once.
//
// Fetches use kafka-go's protocol-level fetch request rather than its
// Reader: the Reader turns an empty key or header value into nil, and
// replay must be able to restore a record exactly.
type fetcher struct {
	mu    sync.Mutex
	buf   []record
	spare []record      // an emptied buf given back by the partition, for the next one
	bytes int64         // of the keys and values in buf
	ready chan struct{} // signalled when buf has records

	mem    *budget
	detach func() // set by the fetch multiplexer: stop fetching this partition
	wake   func() // called after ready is signalled: the partition has work
	took   func() // called after the partition took buf: it has room for a fetch
}

// newFetcher returns an empty fetcher buffer; wake tells its partition
// that it has work, and took tells whoever fills it that it has room.
func newFetcher(mem *budget, wake, took func()) *fetcher {
	return &fetcher{ready: make(chan struct{}, 1), mem: mem, wake: wake, took: took}
}

// recordOverhead is what a fetched record costs beside its key and value:
// its entry in the fetcher's buffer and in the slice that takes over from
// it.
const recordOverhead = 2 * int64(unsafe.Sizeof(record{}))

// arenaSize is the size of the blocks that hold fetched keys and values:
// one allocation for many records, instead of one per record.
const arenaSize = 1 << 20

// minArenaBlock is the size of a partition's first arena block.
const minArenaBlock = 2 << 10

// readRecords decodes a fetched record set from offset *next on, moving
// *next past the last record, and returns batch with the records appended
// and the bytes they hold. Keys and values are copied into the arena.
func readRecords(rs kafka.RecordReader, next *int64, arena *[]byte, batch []record) ([]record, int64, error) {
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
		rec := record{offset: r.Offset, time: r.Time}
		// The batch counts every block it starts, whole: a block's unused
		// tail is memory too.
		rec.key = readBytes(r.Key, arena, &size)
		rec.value = readBytes(r.Value, arena, &size)
		if len(r.Headers) > 0 {
			rec.headers = make([]rowgroup.Header, len(r.Headers))
			for i, h := range r.Headers {
				rec.headers[i].Key = h.Key
				rec.headers[i].Value = copyBytes(h.Value, arena, &size)
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
func (f *fetcher) deliver(batch []record, size int64) ([]record, int64) {
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

// buffered is the bytes the partition has not taken yet.
func (f *fetcher) buffered() int64 {
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

// take returns the records fetched since the last take, and the bytes of
// the budget they hold, which the caller releases once it is done with
// them.
func (f *fetcher) take() ([]record, int64) {
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

// giveBack returns a slice that take returned, once the partition is
// done with its records, to hold later ones: a busy partition then fetches
// without allocating slices of records. A slice much larger than the
// records it held is dropped instead, so that a partition that once
// received a burst does not keep room for it.
func (f *fetcher) giveBack(b []record) {
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

// stop ends the fetch and releases what it held: once it returns, no
// more records arrive.
func (f *fetcher) stop() {
	if f.detach != nil {
		f.detach()
	}
	f.mu.Lock()
	n := f.bytes
	f.buf, f.spare, f.bytes = nil, nil, 0
	f.mu.Unlock()
	f.mem.add(-n)
}

// fetchSize is the most one fetch may bring: fetch.max_bytes, less when
// several partitions share the budget (Kafka still returns a first record
// batch larger than that, so a partition always makes progress).
//
// Small fetches cost less than large ones, not more: while a response is
// decoded, kafka-go holds it whole, compressed and again decompressed, and
// with four partitions 8 MiB fetches pushed the heap against the memory
// limit, where the garbage collector runs without pause. Measured with
// `pqsink bench` (four partitions, lz4 batches): 8 MiB fetches took 5.9 to
// 7.1 CPU-seconds per million records, 512 KiB fetches (with the record
// slices handed over, not copied) 3.0 to 4.2, and peaked at 430 to 466
// MiB instead of 489 to 581. So a fetch takes at most 1/128 of the budget
// per partition.
func (s *Sink) fetchSize() int64 {
	s.mu.Lock()
	running := int64(len(s.parts))
	s.mu.Unlock()
	n := s.mem.limit / (128 * max(1, running))
	return max(64<<10, min(n, s.cfg.Kafka.Fetch.MaxBytes))
}

// commit sends one offset commit in generation gen and returns the first
// error of the request or of a partition.
func (k *kafkaClients) commit(ctx context.Context, gen *generation, topics map[string][]kafka.OffsetCommit) error {
	errs, err := k.commitMany(ctx, gen, topics)
	if err != nil {
		return err
	}
	for topic, ps := range errs {
		for p, err := range ps {
			return fmt.Errorf("%s[%d]: %w", topic, p, err)
		}
	}
	return nil
}

// commitMany sends one offset commit in generation gen, as a member of it
// (a fenced-off member's commit is refused), and returns the error of the
// request or, per topic and partition, those of the partitions that
// failed. A refusal because the group moved on wraps errGenerationOver.
func (k *kafkaClients) commitMany(ctx context.Context, gen *generation, topics map[string][]kafka.OffsetCommit) (map[string]map[int]error, error) {
	resp, err := k.client.OffsetCommit(ctx, &kafka.OffsetCommitRequest{
		GroupID: gen.group, GenerationID: gen.id, MemberID: gen.memberID, InstanceID: gen.instanceID, Topics: topics,
	})
	if err != nil {
		return nil, generationOver(err)
	}
	var errs map[string]map[int]error
	for topic, ps := range resp.Topics {
		for _, p := range ps {
			if p.Error == nil {
				continue
			}
			if errs == nil {
				errs = map[string]map[int]error{}
			}
			if errs[topic] == nil {
				errs[topic] = map[int]error{}
			}
			errs[topic][p.Partition] = generationOver(p.Error)
		}
	}
	return errs, nil
}

// generationOver marks the errors that say the group moved on.
func generationOver(err error) error {
	if errors.Is(err, kafka.IllegalGeneration) || errors.Is(err, kafka.RebalanceInProgress) ||
		errors.Is(err, kafka.UnknownMemberId) || errors.Is(err, kafka.FencedInstanceID) {
		return fmt.Errorf("%w: %w", errGenerationOver, err)
	}
	return err
}

// committed is a partition's committed offset and metadata; offset is -1
// when the group never committed it.
type committed struct {
	offset   int64
	metadata string
}

// fetchCommitted reads the group's committed offsets and metadata.
func (k *kafkaClients) fetchCommitted(ctx context.Context, group string, parts map[string][]int) (map[string]map[int]committed, error) {
	resp, err := k.client.OffsetFetch(ctx, &kafka.OffsetFetchRequest{GroupID: group, Topics: parts})
	if err != nil {
		return nil, fmt.Errorf("fetching committed offsets of group %s: %w", group, err)
	}
	if resp.Error != nil {
		return nil, fmt.Errorf("fetching committed offsets of group %s: %w", group, resp.Error)
	}
	out := map[string]map[int]committed{}
	for topic, ps := range resp.Topics {
		m := map[int]committed{}
		for _, p := range ps {
			if p.Error != nil {
				return nil, fmt.Errorf("fetching committed offset of %s[%d]: %w", topic, p.Partition, p.Error)
			}
			m[p.Partition] = committed{offset: p.CommittedOffset, metadata: p.Metadata}
		}
		out[topic] = m
	}
	return out, nil
}

// startOffsets resolves the first or last offset of partitions the group
// never committed.
func (k *kafkaClients) startOffsets(ctx context.Context, parts map[string][]int, latest bool) (map[string]map[int]int64, error) {
	req := &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{}}
	for topic, ids := range parts {
		for _, id := range ids {
			r := kafka.FirstOffsetOf(id)
			if latest {
				r = kafka.LastOffsetOf(id)
			}
			req.Topics[topic] = append(req.Topics[topic], r)
		}
	}
	resp, err := k.client.ListOffsets(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("listing offsets: %w", err)
	}
	out := map[string]map[int]int64{}
	for topic, ids := range parts {
		got := map[int]kafka.PartitionOffsets{}
		for _, p := range resp.Topics[topic] {
			got[p.Partition] = p
		}
		out[topic] = map[int]int64{}
		for _, id := range ids {
			p, ok := got[id]
			switch {
			case !ok:
				return nil, fmt.Errorf("listing offsets of %s[%d]: no answer for the partition", topic, id)
			case p.Error != nil:
				return nil, fmt.Errorf("listing offsets of %s[%d]: %w", topic, id, p.Error)
			case latest:
				out[topic][id] = p.LastOffset
			default:
				out[topic][id] = p.FirstOffset
			}
		}
	}
	return out, nil
}

// commitOffsets commits offsets without metadata for many partitions in
// one request.
func (k *kafkaClients) commitOffsets(ctx context.Context, gen *generation, offsets map[string]map[int]int64) error {
	topics := map[string][]kafka.OffsetCommit{}
	for topic, offs := range offsets {
		for id, off := range offs {
			topics[topic] = append(topics[topic], kafka.OffsetCommit{Partition: id, Offset: off})
		}
	}
	if err := k.commit(ctx, gen, topics); err != nil {
		return fmt.Errorf("committing start offsets: %w", err)
	}
	return nil
}

// topics lists the topics of the cluster, internal ones left out.
func (k *kafkaClients) topics(ctx context.Context) ([]string, error) {
	resp, err := k.client.Metadata(ctx, &kafka.MetadataRequest{})
	if err != nil {
		return nil, fmt.Errorf("listing topics: %w", err)
	}
	var names []string
	for _, t := range resp.Topics {
		if t.Error == nil && !t.Internal {
			names = append(names, t.Name)
		}
	}
	return names, nil
}
