package connector

import (
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
)

// manyPartitions is the number of partitions beyond which a sink fetches
// them all through one multiplexed fetch loop (a request per leader for
// every partition it leads) rather than a fetch loop per partition:
// kafka-go's Client.Fetch asks for one partition per request, which is
// fine for a few partitions and a storm of requests and connections for
// thousands.
const manyPartitions = 64

// fetchMux fetches many partitions with multi-partition fetch requests.
// Partitions join with add and leave with remove; records go to each
// partition's fetcher buffer, as with a fetch loop of its own.
type fetchMux struct {
	s    *Sink
	log  *slog.Logger
	mu   sync.Mutex
	subs map[muxKey]*muxSub
	wake chan struct{}
}

type muxKey struct {
	topic string
	id    int32
}

// muxSub is one partition being fetched.
type muxSub struct {
	f     *fetcher
	next  int64
	lag   *atomic.Int64
	arena []byte
	batch []record // reused for each fetch's records
	gone  bool     // removed: drop what arrives
}

func newFetchMux(s *Sink) *fetchMux {
	return &fetchMux{s: s, log: s.log, subs: map[muxKey]*muxSub{}, wake: make(chan struct{}, 1)}
}

// add starts fetching a partition at offset into a new fetcher buffer;
// wake is called when records arrive.
func (m *fetchMux) add(topic string, id int32, offset int64, lag *atomic.Int64, wake func()) *fetcher {
	f := newFetcher(m.s.mem, func() {}, wake)
	close(f.done) // no goroutine of its own
	k := muxKey{topic, id}
	m.mu.Lock()
	if old := m.subs[k]; old != nil {
		old.gone = true
	}
	sub := &muxSub{f: f, next: offset, lag: lag}
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
	select {
	case m.wake <- struct{}{}:
	default:
	}
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
// (held twice while decoded), the maxFetchesInFlight requests out at once
// reserve at most a quarter of the budget.
func (m *fetchMux) chunk() int {
	return int(max(16, min(maxFetchPartitions, m.s.mem.limit/32/kafkaPage)))
}

// maxFetchesInFlight bounds the multiplexed fetch requests out at once.
const maxFetchesInFlight = 4

// kafkaPage is the buffer kafka-go's fetch response decoding takes per
// partition with records; a fetch reserves it in the budget.
const kafkaPage = 64 << 10

// run fetches until ctx ends.
func (m *fetchMux) run(ctx context.Context) {
	leaders := map[string]map[int32]int{} // topic → partition → leader id
	// idle: the last round fetched nothing, so this one may wait at the
	// broker for records (max_wait); while records flow, requests return
	// at once, so that one partition without records does not hold up
	// the others.
	idle := true
	for ctx.Err() == nil {
		m.mu.Lock()
		var ready []muxKey
		for k, sub := range m.subs {
			// One fetch ahead of each partition, no more.
			if sub.f.buffered() < m.s.fetchSize() {
				ready = append(ready, k)
			}
		}
		m.mu.Unlock()
		if len(ready) == 0 {
			select {
			case <-ctx.Done():
				return
			case <-m.wake:
			case <-time.After(50 * time.Millisecond):
			}
			continue
		}
		sort.Slice(ready, func(i, j int) bool {
			if ready[i].topic != ready[j].topic {
				return ready[i].topic < ready[j].topic
			}
			return ready[i].id < ready[j].id
		})
		if err := m.refreshLeaders(ctx, leaders, ready); err != nil {
			m.log.Warn("fetch: reading partition leaders", "error", err)
			sleep(ctx, time.Second)
			continue
		}
		byLeader := map[int][]muxKey{}
		for _, k := range ready {
			l := leaders[k.topic][k.id]
			byLeader[l] = append(byLeader[l], k)
		}
		var wg sync.WaitGroup
		var failed, got atomic.Bool
		// A few requests at a time: each reserves its response, decoded,
		// in the budget, and forty of them at once (ten thousand
		// partitions) asked for more than the budget holds, so the relief
		// finished open files to make room for fetches.
		inflight := make(chan struct{}, maxFetchesInFlight)
		for _, keys := range byLeader {
			for len(keys) > 0 {
				chunk := keys[:min(len(keys), m.chunk())]
				keys = keys[len(chunk):]
				wg.Add(1)
				inflight <- struct{}{}
				go func() {
					defer func() { <-inflight }()
					defer wg.Done()
					n, err := m.fetch(ctx, chunk, idle)
					if err != nil && ctx.Err() == nil {
						m.log.Warn("fetch failed; fetching again", "partitions", len(chunk), "error", err)
						failed.Store(true)
					}
					if n > 0 {
						got.Store(true)
					}
				}()
			}
		}
		wg.Wait()
		idle = !got.Load()
		if failed.Load() {
			clear(leaders) // leadership may have moved
			sleep(ctx, time.Second)
		}
	}
}

// refreshLeaders makes sure every key's leader is known.
func (m *fetchMux) refreshLeaders(ctx context.Context, leaders map[string]map[int32]int, keys []muxKey) error {
	var topics []string
	for _, k := range keys {
		if _, ok := leaders[k.topic][k.id]; !ok && (len(topics) == 0 || topics[len(topics)-1] != k.topic) {
			topics = append(topics, k.topic)
		}
	}
	if len(topics) == 0 {
		return nil
	}
	resp, err := m.s.kafka.client.Metadata(ctx, &kafka.MetadataRequest{Topics: topics})
	if err != nil {
		return err
	}
	for _, t := range resp.Topics {
		if t.Error != nil {
			return fmt.Errorf("topic %s: %w", t.Name, t.Error)
		}
		if leaders[t.Name] == nil {
			leaders[t.Name] = map[int32]int{}
		}
		for _, p := range t.Partitions {
			leaders[t.Name][int32(p.ID)] = p.Leader.ID
		}
	}
	return nil
}

// fetch sends one fetch request for keys, which share a leader, and hands
// the records to their partitions; it returns the bytes delivered. With
// wait, the broker may hold the request for fetch.max_wait until it has
// fetch.min_bytes; without, it answers at once.
func (m *fetchMux) fetch(ctx context.Context, keys []muxKey, wait bool) (int64, error) {
	cfg := &m.s.cfg.Kafka
	per := m.s.fetchSize()
	data := min(cfg.Fetch.MaxBytes, per*int64(len(keys)), max(per, m.s.mem.limit/64))
	// The response whole, decompressed again, and a page per partition.
	total := 2*data + kafkaPage*int64(len(keys))
	if err := m.s.mem.reserve(ctx, total); err != nil {
		return 0, err
	}
	held := int64(0)
	defer func() { m.s.mem.add(held - total) }()

	req := &fetchapi.Request{
		ReplicaID: -1, MaxBytes: int32(data), SessionID: -1, SessionEpoch: -1,
	}
	if wait {
		req.MaxWaitTime, req.MinBytes = int32(cfg.Fetch.MaxWait/time.Millisecond), int32(cfg.Fetch.MinBytes)
	}
	m.mu.Lock()
	for _, k := range keys {
		sub := m.subs[k]
		if sub == nil {
			continue
		}
		if n := len(req.Topics); n == 0 || req.Topics[n-1].Topic != k.topic {
			req.Topics = append(req.Topics, fetchapi.RequestTopic{Topic: k.topic})
		}
		t := &req.Topics[len(req.Topics)-1]
		t.Partitions = append(t.Partitions, fetchapi.RequestPartition{
			Partition: k.id, CurrentLeaderEpoch: -1, FetchOffset: sub.next, LogStartOffset: -1, PartitionMaxBytes: int32(per),
		})
	}
	m.mu.Unlock()
	if len(req.Topics) == 0 {
		return 0, nil
	}
	msg, err := m.s.kafka.client.Transport.RoundTrip(ctx, m.s.kafka.client.Addr, req)
	if err != nil {
		return 0, err
	}
	resp, ok := msg.(*fetchapi.Response)
	if !ok {
		return 0, fmt.Errorf("unexpected fetch response %T", msg)
	}
	if resp.ErrorCode != 0 {
		return 0, kafka.Error(resp.ErrorCode)
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			k := muxKey{t.Topic, p.Partition}
			m.mu.Lock()
			sub := m.subs[k]
			m.mu.Unlock()
			if sub == nil || sub.gone {
				closeRecords(p.RecordSet.Records)
				continue
			}
			if p.ErrorCode != 0 {
				closeRecords(p.RecordSet.Records)
				err := kafka.Error(p.ErrorCode)
				if errors.Is(err, kafka.OffsetOutOfRange) && sub.next < p.LogStartOffset {
					m.log.Error("records deleted by retention before they were archived", "topic", k.topic, "partition", k.id, "from", sub.next, "to", p.LogStartOffset-1)
					sub.next = p.LogStartOffset
					continue
				}
				m.log.Warn("fetch: partition error", "topic", k.topic, "partition", k.id, "error", err)
				continue
			}
			if p.RecordSet.Records == nil {
				continue
			}
			batch, size, err := readRecords(p.RecordSet.Records, &sub.next, &sub.arena, sub.batch[:0])
			sub.batch = batch[:0]
			if err != nil {
				m.log.Warn("fetch: reading records", "topic", k.topic, "partition", k.id, "error", err)
				continue
			}
			sub.lag.Store(max(0, p.HighWatermark-sub.next))
			if size < 4*minArenaBlock {
				// A quiet partition: let its block go with its records
				// rather than hold it until the next ones arrive.
				sub.arena = nil
			}
			if len(batch) > 0 {
				held += size
				m.mu.Lock()
				if !sub.gone {
					sub.batch, _ = sub.f.deliver(batch, size)
				} else {
					clear(batch)
					held -= size
				}
				m.mu.Unlock()
			}
		}
	}
	return held, nil
}
