// Package fetch is the sink's fetching from Kafka: one multiplexer (Mux)
// fetches every assigned partition with multi-partition fetch requests,
// within a memory budget, into each partition's Fetcher buffer. It knows
// nothing of the sink's partition pipeline.
package fetch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/segmentio/kafka-go"
	fetchapi "github.com/segmentio/kafka-go/protocol/fetch"

	"github.com/pqsink/pqsink/config"
)

// Mux fetches every partition of the sink, whatever their number,
// with multi-partition fetch requests: a request asks one leader for
// partitions it leads that have room for a fetch. Partitions join with Add
// and leave when their Fetcher stops; records go to each partition's
// Fetcher buffer.
//
// Each partition has at most one fetch out and, as it was with a fetch
// loop per partition, the next is sent as soon as the partition has room
// for it (less than a fetch's worth of records not taken), not when a
// whole round of requests is back: a partition that takes its records
// gets a request while the others' are out, so fetching stays pipelined
// with processing.
//
// Error policy: a fetch that fails, for the request or for a partition,
// and a partition whose leader cannot be read, are retried from the same
// offset after a backoff that doubles per failure (fetchRetryMin to
// fetchRetryMax), with the partition's leader read again from kafka-go's
// metadata, in case leadership moved. Nothing restarts: records already
// fetched stay valid. A partition's first failure is logged as a warning,
// and as an error every fetchErrorPersists while it keeps failing. Offset
// out of range below the log start is retention: see retention.
type Mux struct {
	client *kafka.Client
	cfg    config.Fetch
	mem    Budget
	room   func() int64
	log    *slog.Logger

	mu   sync.Mutex
	subs map[muxKey]*muxSub
	wake chan struct{}
	seq  uint64      // requests made, to fetch the partitions that waited longest first
	out  map[int]int // requests answered at once out, per leader

	correlation atomic.Int32 // of the raw fetch requests
	bufs        bufPool      // response buffers of raw fetches
	decoders    sync.Pool    // *rawDecoder
}

// Budget is the memory budget that fetches reserve in before they ask
// for records, and release into as partitions take them (Fetcher.Take
// returns what to release). Reserve waits while the budget is spent.
type Budget interface {
	// Limit is the budget's size in bytes.
	Limit() int64
	// Reserve takes n bytes, waiting while they do not fit, until ctx ends.
	Reserve(ctx context.Context, n int64) error
	// Add counts n more bytes held (n < 0: released).
	Add(n int64)
}

// Options is what a Mux needs.
type Options struct {
	// Client sends the fetch and metadata requests; its Addr names the
	// brokers and its Timeout bounds a request beyond fetch.max_wait.
	Client *kafka.Client
	// Config is the kafka.fetch section.
	Config config.Fetch
	// Budget is the memory budget that fetches reserve in.
	Budget Budget
	// Room is the most one fetch of a partition may bring, and the bytes
	// a partition may have untaken before it gets no more fetches.
	Room func() int64
	// Log receives the failed fetches and the records lost to retention.
	Log *slog.Logger
}

type muxKey struct {
	topic string
	id    int32
}

// noLeader is a partition's leader when it must be read again.
const noLeader = -1

// muxSub is one partition being fetched. Its fetch state (next, arena,
// batch) belongs to the request it is in while inflight; the rest is
// guarded by the multiplexer's mutex.
type muxSub struct {
	key   muxKey
	f     *Fetcher
	next  int64
	lag   *atomic.Int64
	arena []byte
	batch []Record // reused for each fetch's records

	gone     bool      // removed: drop what arrives
	inflight bool      // in a request that is out
	idle     bool      // its last fetch brought nothing: it may wait at the broker
	leader   int       // its leader's id, or noLeader
	seq      uint64    // the request it was last in
	retryAt  time.Time // after a failed fetch: not before
	failures int       // failed fetches in a row
	since    time.Time // of the first of them
	reported time.Time // when the failures were last logged as an error
}

func New(o Options) *Mux {
	return &Mux{client: o.Client, cfg: o.Config, mem: o.Budget, room: o.Room, log: o.Log, subs: map[muxKey]*muxSub{}, wake: make(chan struct{}, 1), out: map[int]int{}}
}

// poke makes the fetch loop look for partitions to fetch.
func (m *Mux) poke() {
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

// Add starts fetching a partition at offset into a new Fetcher buffer;
// lag is kept at the records the partition has beyond the fetched ones
// (the high watermark less the next offset), and wake is called when
// records arrive. Stopping the Fetcher ends the partition's fetches.
func (m *Mux) Add(topic string, id int32, offset int64, lag *atomic.Int64, wake func()) *Fetcher {
	f := newFetcher(m.mem, wake, m.poke)
	k := muxKey{topic, id}
	// A new partition has not fetched yet; idle, its first request may
	// wait at the broker, as a quiet partition's does.
	sub := &muxSub{key: k, f: f, next: offset, lag: lag, leader: noLeader, idle: true}
	m.mu.Lock()
	if old := m.subs[k]; old != nil {
		old.gone = true
	}
	m.subs[k] = sub
	m.mu.Unlock()
	f.detach = func() {
		m.mu.Lock()
		if m.subs[k] == sub {
			delete(m.subs, k)
		}
		sub.gone = true
		m.mu.Unlock()
	}
	m.poke()
	return f
}

// maxFetchPartitions bounds the partitions of one fetch request.
// kafka-go reads each partition's records of a response into buffers of
// their own, at least a 64 KiB page even for one small record: ten
// thousand partitions in one response would be 640 MiB.
const maxFetchPartitions = 512

// chunk is the number of partitions of one fetch request: at most
// maxFetchPartitions, and few enough that the pages of one request take at
// most 1/32 of the budget. With the data of a request at most 1/64 of it
// (held twice while decoded), the maxFetchesInFlight requests of each kind
// out at once (answered at once, waiting at the broker) reserve at most a
// quarter of the budget each.
func (m *Mux) chunk() int {
	return int(max(16, min(maxFetchPartitions, m.mem.Limit()/32/kafkaPage)))
}

// maxFetchesInFlight bounds the fetch requests of each kind out at once:
// those answered at once, and those that wait at the broker. A few at a
// time: each reserves its response, decoded, in the budget, and forty of
// them at once (ten thousand partitions) asked for more than the budget
// holds, so the relief finished open files to make room for fetches.
const maxFetchesInFlight = 4

// kafkaPage is the buffer kafka-go's fetch response decoding takes per
// partition with records; a fetch reserves it in the budget. The raw
// decoder (raw.go), which reads every response of a broker from Kafka 0.11
// on, takes none, but the reservation stays: it bounds a request's
// partitions (chunk), and a broker may still answer in kafka-go's way.
const kafkaPage = 64 << 10

// Retries of failed fetches: the first after fetchRetryMin, each next one
// after twice as long, up to fetchRetryMax. A partition that has failed
// for fetchErrorPersists is logged as an error, and again every
// fetchErrorPersists while it keeps failing.
const (
	fetchRetryMin      = 200 * time.Millisecond
	fetchRetryMax      = 5 * time.Second
	fetchErrorPersists = time.Minute
)

// Run fetches until ctx ends, and returns once no request is out.
func (m *Mux) Run(ctx context.Context) {
	done := make(chan bool, 2*maxFetchesInFlight) // a request is back; true for one that waited
	var out [2]int                                // requests out: answered at once, waiting
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		var retry time.Duration
		if (out[0] < maxFetchesInFlight || out[1] < maxFetchesInFlight) && ctx.Err() == nil {
			var started [2]int
			started, retry = m.dispatch(ctx, [2]int{maxFetchesInFlight - out[0], maxFetchesInFlight - out[1]}, done)
			out[0] += started[0]
			out[1] += started[1]
		}
		if retry > 0 {
			timer.Reset(retry)
		}
		select {
		case <-ctx.Done():
			for n := out[0] + out[1]; n > 0; n-- {
				<-done
			}
			return
		case waited := <-done:
			if waited {
				out[1]--
			} else {
				out[0]--
			}
		case <-m.wake:
		case <-timer.C:
		}
		timer.Stop()
	}
}

// dispatch sends requests for the partitions that have room for a fetch,
// those that waited longest first: up to slots[0] answered at once, for
// partitions that had records last time, and up to slots[1] that wait at
// the broker, for those that had none. Each reports on done when it is
// back. It returns the requests sent of each kind and, when a partition
// waits for a retry, how long until the first may be tried (0 when none).
//
// Waiting requests are counted apart so that quiet partitions, whose
// requests wait fetch.max_wait at their leaders, do not take the slots of
// busy ones.
func (m *Mux) dispatch(ctx context.Context, slots [2]int, done chan<- bool) ([2]int, time.Duration) {
	now := time.Now()
	var ready, unknown []*muxSub
	var retry time.Duration
	room := m.room()
	m.mu.Lock()
	for _, sub := range m.subs {
		// One fetch ahead of the partition, no more: fetching further
		// ahead would only pile up records, and the arena blocks that
		// hold them.
		if sub.inflight || sub.f.Buffered() >= room {
			continue
		}
		if wait := sub.retryAt.Sub(now); wait > 0 {
			if retry == 0 || wait < retry {
				retry = wait
			}
			continue
		}
		ready = append(ready, sub)
		if sub.leader == noLeader {
			unknown = append(unknown, sub)
		}
	}
	m.mu.Unlock()
	if len(ready) == 0 {
		return [2]int{}, retry
	}
	if len(unknown) > 0 {
		m.readLeaders(ctx, unknown)
	}
	sort.Slice(ready, func(i, j int) bool {
		a, b := ready[i], ready[j]
		if a.seq != b.seq {
			return a.seq < b.seq
		}
		if a.key.topic != b.key.topic {
			return a.key.topic < b.key.topic
		}
		return a.key.id < b.key.id
	})
	m.mu.Lock()
	defer m.mu.Unlock()
	led := map[int]int{} // partitions per leader
	for _, sub := range m.subs {
		if sub.leader != noLeader {
			led[sub.leader]++
		}
	}
	// By kind and leader, the leaders in the order of their longest
	// waiting partition.
	var order []int
	var byLeader [2]map[int][]*muxSub
	byLeader[0], byLeader[1] = map[int][]*muxSub{}, map[int][]*muxSub{}
	seen := map[int]bool{}
	for _, sub := range ready {
		if sub.gone || sub.leader == noLeader {
			continue // its leader could not be read: it waits for a retry
		}
		if !seen[sub.leader] {
			seen[sub.leader] = true
			order = append(order, sub.leader)
		}
		kind := 0
		if sub.idle {
			kind = 1
		}
		byLeader[kind][sub.leader] = append(byLeader[kind][sub.leader], sub)
	}
	var started [2]int
	launch := func(l int, req []*muxSub, wait bool) {
		m.seq++
		for _, sub := range req {
			sub.inflight, sub.seq = true, m.seq
		}
		if !wait {
			m.out[l]++
		}
		go func() {
			m.fetch(ctx, req, wait)
			if !wait {
				m.mu.Lock()
				if m.out[l]--; m.out[l] == 0 {
					delete(m.out, l)
				}
				m.mu.Unlock()
			}
			done <- wait
		}()
	}
	// A request asks for a leader's partitions spread over the requests
	// that may be out, and no fewer unless the leader has none out. With
	// a few partitions, each gets a request of its own as soon as it has
	// room, and their responses decode in parallel (four partitions in one
	// request decoded one after the other, slower than a fetch loop each
	// in `pqsink bench`). With many, the partitions that get room while
	// requests are out wait until there are enough of them: a hundred
	// partitions fetched one or two at a time (with two batches waiting
	// each) took half again as much CPU.
	for more := true; more && started[0] < slots[0]; {
		more = false
		for _, l := range order {
			subs := byLeader[0][l]
			size := min(m.chunk(), (led[l]+maxFetchesInFlight-1)/maxFetchesInFlight)
			if started[0] == slots[0] || len(subs) == 0 || len(subs) < size && m.out[l] > 0 {
				continue
			}
			n := min(len(subs), size)
			byLeader[0][l] = subs[n:]
			launch(l, subs[:n:n], false)
			started[0]++
			more = true
		}
	}
	// The quiet partitions wait at their leaders in requests as large as
	// may be, the leaders in turn.
	for more := true; more && started[1] < slots[1]; {
		more = false
		for _, l := range order {
			subs := byLeader[1][l]
			if started[1] == slots[1] || len(subs) == 0 {
				continue
			}
			n := min(len(subs), m.chunk())
			byLeader[1][l] = subs[n:]
			launch(l, subs[:n:n], true)
			started[1]++
			more = true
		}
	}
	for _, sub := range unknown {
		if sub.leader == noLeader && !sub.gone {
			if wait := sub.retryAt.Sub(now); retry == 0 || wait < retry {
				retry = max(wait, time.Millisecond)
			}
		}
	}
	return started, retry
}

// readLeaders reads the leaders of subs from kafka-go's metadata, the
// view by which its transport routes the requests. A partition whose
// leader it cannot read has failed, as a fetch fails.
func (m *Mux) readLeaders(ctx context.Context, subs []*muxSub) {
	var topics []string
	seen := map[string]bool{}
	for _, sub := range subs {
		if !seen[sub.key.topic] {
			seen[sub.key.topic] = true
			topics = append(topics, sub.key.topic)
		}
	}
	resp, err := m.client.Metadata(ctx, &kafka.MetadataRequest{Topics: topics})
	leaders := map[muxKey]int{}
	topicErrs := map[string]error{}
	if err == nil {
		for _, t := range resp.Topics {
			if t.Error != nil {
				topicErrs[t.Name] = t.Error
				continue
			}
			for _, p := range t.Partitions {
				if p.Error == nil {
					leaders[muxKey{t.Name, int32(p.ID)}] = p.Leader.ID
				}
			}
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err != nil {
		if ctx.Err() == nil {
			m.failedAll(subs, fmt.Errorf("reading partition leaders: %w", err))
		}
		return
	}
	for _, sub := range subs {
		if l, ok := leaders[sub.key]; ok {
			sub.leader = l
			continue
		}
		err := topicErrs[sub.key.topic]
		if err == nil {
			err = errors.New("the partition is not in the metadata")
		}
		m.logFailure(sub, m.failed(sub), fmt.Errorf("reading the partition's leader: %w", err))
	}
}

// fetch sends one fetch request for subs, which share a leader and are
// inflight, hands the records to their partitions and settles each
// partition's state. With wait, the broker may hold the request for
// fetch.max_wait until it has fetch.min_bytes: its partitions had no
// records last time. Without, it answers at once, so that quiet
// partitions do not hold up a busy one.
func (m *Mux) fetch(ctx context.Context, subs []*muxSub, wait bool) {
	err := m.request(ctx, subs, wait)
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, sub := range subs {
		sub.inflight = false
	}
	if err != nil && ctx.Err() == nil {
		m.failedAll(subs, err)
	}
}

// failedAll sets subs up for a retry after a request for them all failed,
// with one line in the log for the request, not one per partition.
func (m *Mux) failedAll(subs []*muxSub, err error) {
	var first, persists int
	for _, sub := range subs {
		if sub.gone {
			continue
		}
		switch m.failed(sub) {
		case failedFirst:
			first++
		case failedPersists:
			persists++
		}
	}
	switch {
	case persists > 0:
		m.log.Error("fetch keeps failing; retrying", "partitions", len(subs), "failing_for_long", persists, "error", err)
	case first > 0:
		m.log.Warn("fetch failed; retrying", "partitions", len(subs), "error", err)
	default:
		m.log.Debug("fetch failed; retrying", "partitions", len(subs), "error", err)
	}
}

// request is fetch's round trip: it returns the error of the request as
// a whole; a partition's own error is settled here.
func (m *Mux) request(ctx context.Context, subs []*muxSub, wait bool) error {
	cfg := &m.cfg
	per := m.room()
	data := min(cfg.MaxBytes, per*int64(len(subs)), max(per, m.mem.Limit()/64))
	// Reserve what the fetch may bring before asking for it, which is
	// where fetching pauses when the memory budget is spent: the response
	// whole, decompressed again, and a page per partition.
	total := 2*data + kafkaPage*int64(len(subs))
	if err := m.mem.Reserve(ctx, total); err != nil {
		return err
	}
	held := int64(0)
	defer func() { m.mem.Add(held - total) }() // keep only what the records hold

	req := &fetchapi.Request{ReplicaID: -1, MaxBytes: int32(data), SessionID: -1, SessionEpoch: -1}
	if wait {
		req.MaxWaitTime, req.MinBytes = int32(cfg.MaxWait/time.Millisecond), int32(cfg.MinBytes)
	}
	bySub := make(map[muxKey]*muxSub, len(subs))
	for _, sub := range subs {
		k := sub.key
		bySub[k] = sub
		if n := len(req.Topics); n == 0 || req.Topics[n-1].Topic != k.topic {
			req.Topics = append(req.Topics, fetchapi.RequestTopic{Topic: k.topic})
		}
		t := &req.Topics[len(req.Topics)-1]
		t.Partitions = append(t.Partitions, fetchapi.RequestPartition{
			Partition: k.id, CurrentLeaderEpoch: -1, FetchOffset: sub.next, LogStartOffset: -1, PartitionMaxBytes: int32(per),
		})
	}
	// A connection that stops answering must not hold the partitions.
	rctx, cancel := context.WithTimeout(ctx, cfg.MaxWait+max(m.client.Timeout, 10*time.Second))
	defer cancel()
	raw := &rawFetch{Request: req, clientID: m.clientID(), correlationID: m.correlation.Add(1), buf: m.bufs.get()}
	msg, err := m.client.Transport.RoundTrip(rctx, m.client.Addr, raw)
	if err != nil {
		m.bufs.put(raw.buf, m.keepLimit())
		return err
	}
	switch resp := msg.(type) {
	case *rawResponse:
		defer m.bufs.put(raw.buf, m.keepLimit())
		code, parts, err := parseRawResponse(resp, nil)
		if err != nil {
			return err
		}
		if code != 0 {
			return kafka.Error(code)
		}
		dec, _ := m.decoders.Get().(*rawDecoder)
		if dec == nil {
			dec = &rawDecoder{}
		}
		defer func() {
			if int64(dec.plain.Cap()) > m.keepLimit() {
				dec.plain = bytes.Buffer{} // a batch of rare size: let it go
			}
			m.decoders.Put(dec)
		}()
		for i := range parts {
			p := &parts[i]
			sub := bySub[muxKey{p.topic, p.id}]
			if sub == nil {
				continue
			}
			held += m.settle(sub, p.errorCode, p.highWatermark, p.logStart, func(next *int64, arena *[]byte, batch []Record) ([]Record, int64, error) {
				if p.records == nil {
					return batch, 0, nil
				}
				return dec.readRawRecords(p.records, next, arena, batch)
			})
		}
	case *fetchapi.Response:
		// A fetch version before the raw decoder's: kafka-go decoded it.
		m.bufs.put(raw.buf, m.keepLimit())
		if resp.ErrorCode != 0 {
			for _, t := range resp.Topics {
				for _, p := range t.Partitions {
					closeRecords(p.RecordSet.Records)
				}
			}
			return kafka.Error(resp.ErrorCode)
		}
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				sub := bySub[muxKey{t.Topic, p.Partition}]
				if sub == nil || p.ErrorCode != 0 {
					closeRecords(p.RecordSet.Records)
				}
				if sub == nil {
					continue
				}
				rs := p.RecordSet.Records
				held += m.settle(sub, p.ErrorCode, p.HighWatermark, p.LogStartOffset, func(next *int64, arena *[]byte, batch []Record) ([]Record, int64, error) {
					if rs == nil {
						return batch, 0, nil
					}
					return readRecords(rs, next, arena, batch)
				})
			}
		}
	default:
		m.bufs.put(raw.buf, m.keepLimit())
		return fmt.Errorf("unexpected fetch response %T", msg)
	}
	return nil
}

// keepLimit is the largest response or decompression buffer the
// multiplexer keeps for later fetches: what a fetch brings with the
// budget's usual share (1/64 of it), at least a megabyte.
func (m *Mux) keepLimit() int64 {
	return max(1<<20, m.mem.Limit()/64)
}

// clientID is the client id of the Kafka client's transport, which the
// raw fetch requests carry as kafka-go's own requests do.
func (m *Mux) clientID() string {
	if t, ok := m.client.Transport.(*kafka.Transport); ok {
		return t.ClientID
	}
	return ""
}

// recordsReader decodes a partition's records of a fetch response from
// offset *next on, appending them to batch with their keys and values in
// the arena: readRecords or rawDecoder.readRawRecords.
type recordsReader func(next *int64, arena *[]byte, batch []Record) ([]Record, int64, error)

// settle hands a partition's part of a fetch response (its error code,
// high watermark, log start offset and records) to it and returns the
// bytes its records hold.
func (m *Mux) settle(sub *muxSub, code int16, highWatermark, logStart int64, read recordsReader) int64 {
	k := sub.key
	if code != 0 {
		err := kafka.Error(code)
		m.mu.Lock()
		defer m.mu.Unlock()
		if sub.gone {
			return 0
		}
		if m.retention(sub, err, logStart) {
			return 0
		}
		m.logFailure(sub, m.failed(sub), err)
		return 0
	}
	from := sub.next
	batch, size, err := read(&sub.next, &sub.arena, sub.batch[:0])
	sub.batch = batch[:0]
	m.mu.Lock()
	defer m.mu.Unlock()
	if sub.gone {
		clear(batch)
		return 0
	}
	if err != nil {
		// The records read before the error are dropped with it: fetch
		// them again.
		sub.next = from
		m.logFailure(sub, m.failed(sub), fmt.Errorf("reading records: %w", err))
		return 0
	}
	if sub.failures > 0 {
		m.log.Info("fetch recovered", "topic", k.topic, "partition", k.id, "failures", sub.failures)
	}
	sub.failures, sub.retryAt = 0, time.Time{}
	sub.idle = len(batch) == 0
	sub.lag.Store(max(0, highWatermark-sub.next))
	if size < 4*minArenaBlock {
		// A quiet partition: let its block go with its records rather
		// than hold it until the next ones arrive.
		sub.arena = nil
	}
	if len(batch) == 0 {
		return 0
	}
	sub.batch, _ = sub.f.deliver(batch, size)
	return size
}

// retention handles offset out of range below the log start: retention
// deleted the records before they were read, and nothing can bring them
// back; say so, and go on from the first record there is. It reports
// whether err was that.
func (m *Mux) retention(sub *muxSub, err error, logStart int64) bool {
	if !errors.Is(err, kafka.OffsetOutOfRange) || sub.next >= logStart {
		return false
	}
	m.log.Error("records deleted by retention before they were archived",
		"topic", sub.key.topic, "partition", sub.key.id, "from", sub.next, "to", logStart-1)
	sub.next = logStart
	sub.idle, sub.failures, sub.retryAt = false, 0, time.Time{}
	return true
}

// A failure, as failed counts it: the first of a row, one after the
// partition has been failing for fetchErrorPersists (reported at most
// once per fetchErrorPersists), or another.
const (
	failedAgain = iota
	failedFirst
	failedPersists
)

// failed sets a partition's fetch up for a retry after a failure: from
// the same offset, after a backoff, with its leader read again. It
// returns which failure this is, for the log.
func (m *Mux) failed(sub *muxSub) int {
	now := time.Now()
	sub.failures++
	sub.leader = noLeader
	sub.retryAt = now.Add(min(fetchRetryMax, fetchRetryMin<<min(sub.failures-1, 10)))
	switch {
	case sub.failures == 1:
		sub.since, sub.reported = now, now
		return failedFirst
	case now.Sub(sub.reported) >= fetchErrorPersists:
		sub.reported = now
		return failedPersists
	}
	return failedAgain
}

// logFailure logs a partition's failed fetch.
func (m *Mux) logFailure(sub *muxSub, kind int, err error) {
	k := sub.key
	switch kind {
	case failedFirst:
		m.log.Warn("fetch failed; retrying", "topic", k.topic, "partition", k.id, "offset", sub.next, "error", err)
	case failedPersists:
		m.log.Error("fetch keeps failing; retrying", "topic", k.topic, "partition", k.id, "offset", sub.next,
			"failures", sub.failures, "since", sub.since, "error", err)
	default:
		m.log.Debug("fetch failed; retrying", "topic", k.topic, "partition", k.id, "offset", sub.next, "error", err)
	}
}
