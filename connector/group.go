package connector

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/protocol"
	"github.com/segmentio/kafka-go/protocol/consumer"
	"github.com/segmentio/kafka-go/protocol/joingroup"

	"github.com/pqsink/pqsink/config"
)

// The sink's membership of its consumer group is its own, on kafka-go's
// group API (JoinGroup, SyncGroup, Heartbeat, LeaveGroup), so that a
// rebalance moves only what must move and a moving partition is finished
// by its old owner before the new one reads it (incremental cooperative
// rebalancing, KIP-429):
//
//   - Each member puts the partitions it holds in its join metadata.
//   - The leader keeps every partition with its owner as far as the
//     balance allows (sticky); a partition that must change owner is
//     withheld: assigned to nobody, and missing from its owner's
//     assignment.
//   - An owner that misses a partition it holds finishes it (uploads and
//     commits its files, as at shutdown, in the new generation) and then
//     rejoins; that rebalance finds the partition unowned and gives it to
//     its new owner, which starts exactly where the old one ended.
//   - Partitions that stay keep their open files across the rebalance.
//
// Members also offer the range protocol of kafka-go's eager consumer
// group, which the coordinator chooses while a member of an older release
// (which knows only that one) is in the group: partitions then move at
// once, with no handover, and their old owner drops them (the exactly-once
// protocol makes that safe, at the cost of reading the open windows
// again).
const (
	protocolSticky = "pqsink-cooperative-sticky"
	protocolRange  = "range"
)

// generation is one generation of the group as this member sees it.
type generation struct {
	id         int
	group      string
	memberID   string
	instanceID string
	protocol   string
	assigned   map[string][]int // by topic, sorted
	// start is when the rebalance that led to it started.
	start time.Time
}

// cooperative says whether partitions are handed over in this generation
// (the sticky protocol), rather than dropped at once (range).
func (g *generation) cooperative() bool { return g.protocol == protocolSticky }

// has says whether the generation assigns the partition to this member.
func (g *generation) has(topic string, id int) bool {
	_, ok := slices.BinarySearch(g.assigned[topic], id)
	return ok
}

// groupHandler is what a membership drives: the sink's partitions.
type groupHandler interface {
	// settle waits, at most until ctx ends, for the partitions being
	// handed over to be finished: uploaded and in their tables. A join
	// sent before would no longer claim them, and the leader could give
	// them to their next owner while their last files are not in the
	// table yet (KIP-429: revocation completes before the rejoin).
	settle(ctx context.Context)
	// owned lists the partitions held now, for the join metadata.
	owned() map[string][]int
	// assigned starts a generation; ctx ends with the generation.
	assigned(ctx context.Context, gen *generation)
	// lost drops every partition (the member is out of the group) and
	// returns once none is held.
	lost()
}

// hbResult is why the heartbeats of a generation ended.
type hbResult int

const (
	hbRejoin  hbResult = iota // a rebalance started, or this member asked for one
	hbLost                    // the member is no longer in the group
	hbStopped                 // the sink stopped and let every partition go
)

// member is the sink's membership of the consumer group.
type member struct {
	k          *kafkaClients
	client     *kafka.Client // for the group requests: its timeout allows a join's wait
	cfg        *config.Kafka
	log        *slog.Logger
	h          groupHandler
	stats      *Stats
	instanceID string

	mu       sync.Mutex
	topics   []string
	rejoinCh chan struct{} // a rejoin is asked for

	coord    net.Addr // the group's coordinator, nil until found
	memberID string

	// failing is told of each failure to join or heartbeat, and of the
	// next success (nil), for /readyz; nil when nobody listens. flog
	// logs those failures at growing intervals.
	failing func(error)
	flog    failureLog
}

// fail notes a failed join or heartbeat: an ERROR at growing intervals
// (failureLog), and /readyz not ready.
func (m *member) fail(msg string, err error) {
	m.flog.failed(m.log, msg, err, "group", m.cfg.Group, "brokers", m.cfg.Brokers)
	if m.failing != nil {
		m.failing(err)
	}
}

// ok ends a run of failures.
func (m *member) ok() {
	m.flog.recovered(m.log, "consumer group reachable again", "group", m.cfg.Group)
	if m.failing != nil {
		m.failing(nil)
	}
}

func newMember(k *kafkaClients, cfg *config.Kafka, log *slog.Logger, h groupHandler, stats *Stats, topics []string) *member {
	c := *k.client
	c.Timeout = cfg.RebalanceTimeout + cfg.SessionTimeout + 10*time.Second
	return &member{
		k: k, client: &c, cfg: cfg, log: log, h: h, stats: stats,
		topics: topics, rejoinCh: make(chan struct{}, 1),
	}
}

// rejoin asks for a rebalance: the member's holdings changed.
func (m *member) rejoin() {
	select {
	case m.rejoinCh <- struct{}{}:
	default:
	}
}

// subscribe changes the topics of the member and rejoins.
func (m *member) subscribe(topics []string) {
	m.mu.Lock()
	m.topics = topics
	m.mu.Unlock()
	m.rejoin()
}

// run is the membership: it joins, hands each generation to the handler
// and heartbeats, until stopped is closed (the sink stopped and every
// partition is let go). Then it leaves the group, unless it is a static
// member, whose partitions wait for it for the session timeout. ctx bounds
// the requests; it is not the sink's (a stopping sink still commits as a
// member).
func (m *member) run(ctx context.Context, stopped <-chan struct{}) {
	defer m.leave()
	var start time.Time
	failures := 0
	for {
		select {
		case <-stopped:
			return
		case <-ctx.Done():
			return
		default:
		}
		if start.IsZero() {
			start = time.Now()
		}
		gen, err := m.join(ctx, stopped)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			select {
			case <-stopped:
				return
			default:
			}
			// An unreachable broker is retried with backoff, and logged
			// at growing intervals, not every second forever.
			failures++
			m.fail("consumer group: cannot join; retrying with backoff", err)
			// A stopping sink does not wait for the backoff.
			t := time.NewTimer(backoff(failures, 30*time.Second))
			select {
			case <-t.C:
			case <-stopped:
			case <-ctx.Done():
			}
			t.Stop()
			continue
		}
		failures = 0
		m.ok()
		gen.start, start = start, time.Time{}
		m.stats.rebalances.Add(1)
		gctx, endGen := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			m.h.assigned(gctx, gen)
		}()
		res := m.heartbeat(ctx, gen, stopped)
		endGen()
		<-done
		if res == hbLost {
			m.h.lost()
		}
		if res == hbStopped {
			return
		}
	}
}

// join joins the group and syncs: it returns the next generation.
func (m *member) join(ctx context.Context, stopped <-chan struct{}) (*generation, error) {
	for attempt := 0; ; attempt++ {
		if attempt > 0 && !sleep(ctx, min(time.Duration(attempt)*100*time.Millisecond, time.Second)) {
			return nil, ctx.Err()
		}
		select {
		case <-stopped:
			return nil, errors.New("stopped")
		default:
		}
		if err := m.findCoordinator(ctx); err != nil {
			return nil, err
		}
		// Within the rebalance timeout, or the coordinator goes on
		// without this member.
		sctx, cancel := context.WithTimeout(ctx, m.cfg.RebalanceTimeout/2)
		m.h.settle(sctx)
		cancel()
		select {
		case <-m.rejoinCh: // this join is the rejoin asked for
		default:
		}
		m.mu.Lock()
		topics := m.topics
		m.mu.Unlock()
		owned := m.h.owned()
		var restored map[string][]int
		if m.memberID == "" && m.instanceID != "" {
			// A static member that comes back joins as it last joined, so
			// that the coordinator gives it its partitions back without a
			// rebalance.
			if restored = m.previousJoin(ctx, topics); restored != nil {
				owned = restored
			}
		}
		resp, err := m.joinGroup(ctx, topics, owned)
		if err != nil {
			m.coord = nil
			return nil, fmt.Errorf("joining group %s: %w", m.cfg.Group, err)
		}
		switch err := resp.Error; {
		case err == nil:
		case errors.Is(err, kafka.MemberIDRequired):
			m.memberID = resp.MemberID
			continue
		case errors.Is(err, kafka.UnknownMemberId), errors.Is(err, kafka.IllegalGeneration), errors.Is(err, kafka.FencedInstanceID):
			m.log.Warn("consumer group: this member is no longer in the group; its partitions are dropped", "group", m.cfg.Group, "error", err)
			m.memberID = ""
			m.h.lost()
			continue
		case errors.Is(err, kafka.NotCoordinatorForGroup), errors.Is(err, kafka.GroupCoordinatorNotAvailable), errors.Is(err, kafka.RebalanceInProgress):
			m.coord = nil
			continue
		default:
			return nil, fmt.Errorf("joining group %s: %w", m.cfg.Group, err)
		}
		m.memberID = resp.MemberID
		var assignments []kafka.SyncGroupRequestAssignment
		if resp.LeaderID == resp.MemberID {
			if assignments, err = m.assign(ctx, resp.ProtocolName, resp.Members); err != nil {
				return nil, err
			}
		}
		sresp, err := m.client.SyncGroup(ctx, &kafka.SyncGroupRequest{
			Addr: m.coord, GroupID: m.cfg.Group, GenerationID: resp.GenerationID, MemberID: m.memberID,
			GroupInstanceID: m.instanceID, ProtocolType: "consumer", ProtocolName: resp.ProtocolName, Assignments: assignments,
		})
		if err != nil {
			m.coord = nil
			return nil, fmt.Errorf("syncing group %s: %w", m.cfg.Group, err)
		}
		switch err := sresp.Error; {
		case err == nil:
		case errors.Is(err, kafka.RebalanceInProgress):
			continue
		case errors.Is(err, kafka.UnknownMemberId), errors.Is(err, kafka.IllegalGeneration), errors.Is(err, kafka.FencedInstanceID):
			m.memberID = ""
			m.h.lost()
			continue
		default:
			m.coord = nil
			return nil, fmt.Errorf("syncing group %s: %w", m.cfg.Group, err)
		}
		gen := &generation{
			id: resp.GenerationID, group: m.cfg.Group, memberID: m.memberID, instanceID: m.instanceID,
			protocol: resp.ProtocolName, assigned: map[string][]int{},
		}
		for topic, ids := range sresp.Assignment.AssignedPartitions {
			if len(ids) > 0 {
				gen.assigned[topic] = slices.Sorted(slices.Values(ids))
			}
		}
		for topic, ids := range restored {
			for _, id := range ids {
				if !gen.has(topic, id) {
					// Claimed, not held, and withheld from their new owner
					// until this member rejoins without them.
					m.rejoin()
				}
			}
		}
		return gen, nil
	}
}

// previousJoin returns the partitions that the member of the group with
// this member's instance id claimed when it last joined, nil when there
// is none or it subscribed to other topics. kafka-go does not report a
// member's instance id; Kafka (and kfake) name a static member
// "<instance id>-<UUID>".
func (m *member) previousJoin(ctx context.Context, topics []string) map[string][]int {
	resp, err := m.k.client.DescribeGroups(ctx, &kafka.DescribeGroupsRequest{GroupIDs: []string{m.cfg.Group}})
	if err != nil {
		m.log.Debug("describing the group", "group", m.cfg.Group, "error", err)
		return nil
	}
	for _, g := range resp.Groups {
		for _, mem := range g.Members {
			rest, ok := strings.CutPrefix(mem.MemberID, m.instanceID+"-")
			if !ok || !isUUID(rest) || !slices.Equal(mem.MemberMetadata.Topics, topics) {
				continue
			}
			out := map[string][]int{}
			for _, o := range mem.MemberMetadata.OwnedPartitions {
				out[o.Topic] = append(out[o.Topic], o.Partitions...)
			}
			m.log.Info("static member: rejoining as the previous member with this instance id", "instance_id", m.instanceID, "member", mem.MemberID)
			return out
		}
	}
	return nil
}

// isUUID says whether s is a UUID as Kafka (36 characters with dashes)
// or kfake (32 hex digits) writes them in member ids.
func isUUID(s string) bool {
	if (len(s) != 32 || strings.Contains(s, "-")) && (len(s) != 36 || strings.Count(s, "-") != 4) {
		return false
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' || c == '-') {
			return false
		}
	}
	return true
}

// findCoordinator finds the group's coordinator unless known.
func (m *member) findCoordinator(ctx context.Context) error {
	if m.coord != nil {
		return nil
	}
	resp, err := m.k.client.FindCoordinator(ctx, &kafka.FindCoordinatorRequest{Key: m.cfg.Group, KeyType: kafka.CoordinatorKeyTypeConsumer})
	if err == nil && resp.Error != nil {
		err = resp.Error
	}
	if err == nil && resp.Coordinator == nil {
		err = errors.New("no coordinator in the answer")
	}
	if err != nil {
		return fmt.Errorf("finding the coordinator of group %s: %w", m.cfg.Group, err)
	}
	m.coord = kafka.TCP(net.JoinHostPort(resp.Coordinator.Host, strconv.Itoa(resp.Coordinator.Port)))
	return nil
}

// heartbeat keeps the member in generation gen until a rebalance starts,
// the member is out, or the sink has stopped.
func (m *member) heartbeat(ctx context.Context, gen *generation, stopped <-chan struct{}) hbResult {
	t := time.NewTicker(m.cfg.HeartbeatInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return hbStopped
		case <-stopped:
			return hbStopped
		case <-m.rejoinCh:
			return hbRejoin
		case <-t.C:
		}
		resp, err := m.client.Heartbeat(ctx, &kafka.HeartbeatRequest{
			Addr: m.coord, GroupID: m.cfg.Group, GenerationID: int32(gen.id), MemberID: gen.memberID, GroupInstanceID: m.instanceID,
		})
		if err == nil {
			err = heartbeatError(resp)
		}
		switch {
		case err == nil:
			m.ok()
		case errors.Is(err, kafka.RebalanceInProgress):
			return hbRejoin
		case errors.Is(err, kafka.UnknownMemberId), errors.Is(err, kafka.IllegalGeneration), errors.Is(err, kafka.FencedInstanceID):
			m.log.Warn("consumer group: this member is no longer in the group; its partitions are dropped", "group", m.cfg.Group, "generation", gen.id, "error", err)
			m.memberID = ""
			return hbLost
		case errors.Is(err, kafka.NotCoordinatorForGroup), errors.Is(err, kafka.GroupCoordinatorNotAvailable):
			m.coord = nil
			if err := m.findCoordinator(ctx); err != nil {
				m.log.Warn("heartbeat", "error", err)
			}
		default:
			if ctx.Err() == nil {
				m.fail("consumer group: heartbeat failed", err)
			}
		}
	}
}

// heartbeatError is the error of a heartbeat's answer.
//
// kafka-go (v0.4.51) declares the fields of HeartbeatResponse v1 and later
// in the wrong order, the error code before the throttle time where Kafka
// sends the throttle time first: the error code arrives as the low 16 bits
// of the throttle time in milliseconds, and Error holds the high 16 bits of
// the throttle time (none under 65 s). A group error code found there is
// the answer's error. TestHeartbeatSeesRebalance pins this against a
// broker, so that a kafka-go that fixes the order is noticed.
func heartbeatError(resp *kafka.HeartbeatResponse) error {
	code := kafka.Error(int16(resp.Throttle / time.Millisecond))
	if resp.Error != nil && !errors.As(resp.Error, &code) {
		return resp.Error
	}
	switch code {
	case kafka.RebalanceInProgress, kafka.UnknownMemberId, kafka.IllegalGeneration, kafka.FencedInstanceID,
		kafka.NotCoordinatorForGroup, kafka.GroupCoordinatorNotAvailable, kafka.GroupAuthorizationFailed:
		return code
	}
	return nil
}

// leave leaves the group after a clean shutdown, a static member too: its
// partitions, finished, go to the others at once (in Kubernetes, the pod
// that replaces a terminated one has another name). A static member that
// dies without a shutdown stays in the group until the session timeout,
// so that its restart under the same instance id moves nothing.
func (m *member) leave() {
	if m.memberID == "" || m.coord == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := m.client.LeaveGroup(ctx, &kafka.LeaveGroupRequest{Addr: m.coord, GroupID: m.cfg.Group,
		Members: []kafka.LeaveGroupRequestMember{{ID: m.memberID, GroupInstanceID: m.instanceID}}})
	if err != nil {
		m.log.Warn("leaving the group", "group", m.cfg.Group, "error", err)
	}
}

// joinResponse is the answer to a JoinGroup.
type joinResponse struct {
	Error        error
	GenerationID int
	ProtocolName string
	LeaderID     string
	MemberID     string
	Members      []groupMember
}

// joinGroup sends a JoinGroup. It goes through kafka-go's protocol
// package, not kafka.Client.JoinGroup, which fails on the join metadata
// of kafka-go's own ConsumerGroup (the members of earlier releases): it
// reads every subscription as version 1, with the owned partitions that a
// version 0 subscription does not have.
func (m *member) joinGroup(ctx context.Context, topics []string, owned map[string][]int) (*joinResponse, error) {
	sub := consumer.Subscription{Version: consumer.MaxVersionSupported, Topics: topics}
	for _, topic := range slices.Sorted(maps.Keys(owned)) {
		tp := consumer.TopicPartition{Topic: topic}
		for _, id := range owned[topic] {
			tp.Partitions = append(tp.Partitions, int32(id))
		}
		sub.OwnedPartitions = append(sub.OwnedPartitions, tp)
	}
	md, err := protocol.Marshal(consumer.MaxVersionSupported, sub)
	if err != nil {
		return nil, fmt.Errorf("encoding the join metadata: %w", err)
	}
	// The range protocol's metadata is what kafka-go's ConsumerGroup
	// writes and reads (version 1 without owned partitions: it refuses
	// bytes it does not read), so that a member of an earlier release can
	// lead a group that runs range.
	rangeMD, err := protocol.Marshal(0, consumer.Subscription{Version: 1, Topics: topics, UserData: []byte{}})
	if err != nil {
		return nil, fmt.Errorf("encoding the join metadata: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, m.client.Timeout)
	defer cancel()
	msg, err := m.client.Transport.RoundTrip(ctx, m.coord, &joingroup.Request{
		GroupID: m.cfg.Group, SessionTimeoutMS: int32(m.cfg.SessionTimeout.Milliseconds()), RebalanceTimeoutMS: int32(m.cfg.RebalanceTimeout.Milliseconds()),
		MemberID: m.memberID, GroupInstanceID: m.instanceID, ProtocolType: "consumer",
		Protocols: []joingroup.RequestProtocol{{Name: protocolSticky, Metadata: md}, {Name: protocolRange, Metadata: rangeMD}},
	})
	if err != nil {
		return nil, err
	}
	r, ok := msg.(*joingroup.Response)
	if !ok {
		return nil, fmt.Errorf("unexpected answer %T to a JoinGroup", msg)
	}
	out := &joinResponse{GenerationID: int(r.GenerationID), ProtocolName: r.ProtocolName, LeaderID: r.LeaderID, MemberID: r.MemberID}
	if r.ErrorCode != 0 {
		out.Error = kafka.Error(r.ErrorCode)
	}
	for _, mem := range r.Members {
		var s consumer.Subscription
		if r.ProtocolName != protocolSticky || protocol.Unmarshal(mem.Metadata, consumer.MaxVersionSupported, &s) != nil {
			s = consumer.Subscription{}
			if err := protocol.Unmarshal(mem.Metadata, 0, &s); err != nil {
				return nil, fmt.Errorf("the join metadata of member %s: %w", mem.MemberID, err)
			}
		}
		gm := groupMember{id: mem.MemberID, topics: s.Topics, owned: map[string][]int{}}
		for _, tp := range s.OwnedPartitions {
			for _, id := range tp.Partitions {
				gm.owned[tp.Topic] = append(gm.owned[tp.Topic], int(id))
			}
		}
		out.Members = append(out.Members, gm)
	}
	return out, nil
}

// assign computes the generation's assignment as its leader.
func (m *member) assign(ctx context.Context, protocolName string, members []groupMember) ([]kafka.SyncGroupRequestAssignment, error) {
	topics := map[string]bool{}
	for _, mem := range members {
		for _, t := range mem.topics {
			topics[t] = true
		}
	}
	counts, err := m.partitionCounts(ctx, topics)
	if err != nil {
		return nil, err
	}
	var plan map[string]map[string][]int
	if protocolName == protocolSticky {
		plan = stickyAssign(members, counts)
	} else {
		plan = rangeAssign(members, counts)
	}
	out := make([]kafka.SyncGroupRequestAssignment, 0, len(members))
	for _, mem := range members {
		out = append(out, kafka.SyncGroupRequestAssignment{MemberID: mem.id, Assignment: kafka.GroupProtocolAssignment{AssignedPartitions: plan[mem.id]}})
	}
	return out, nil
}

// partitionCounts reads the number of partitions of each topic.
func (m *member) partitionCounts(ctx context.Context, topics map[string]bool) (map[string]int, error) {
	names := make([]string, 0, len(topics))
	for t := range topics {
		names = append(names, t)
	}
	resp, err := m.k.client.Metadata(ctx, &kafka.MetadataRequest{Topics: names})
	if err != nil {
		return nil, fmt.Errorf("reading the partitions of %v: %w", names, err)
	}
	out := map[string]int{}
	for _, t := range resp.Topics {
		if t.Error == nil {
			out[t.Name] = len(t.Partitions)
		}
	}
	return out, nil
}

// groupMember is a member as the leader sees it.
type groupMember struct {
	id     string
	topics []string
	owned  map[string][]int
}

// rangeAssign is kafka-go's range assignment, for a group that runs the
// range protocol (members of an older release among them).
func rangeAssign(members []groupMember, counts map[string]int) map[string]map[string][]int {
	gm := make([]kafka.GroupMember, len(members))
	for i, m := range members {
		gm[i] = kafka.GroupMember{ID: m.id, Topics: m.topics}
	}
	var parts []kafka.Partition
	for topic, n := range counts {
		for id := range n {
			parts = append(parts, kafka.Partition{Topic: topic, ID: id})
		}
	}
	out := map[string]map[string][]int{}
	for id, a := range (kafka.RangeGroupBalancer{}).AssignGroups(gm, parts) {
		out[id] = a
	}
	return out
}

// stickyAssign balances the partitions of each topic between the members
// that subscribe to it, keeping every partition with the member that
// holds it as far as the balance allows. A partition that changes owner
// is withheld (assigned to nobody) while its owner holds it: the owner
// finishes it and rejoins, and the next assignment gives it to its new
// owner. The result is a function of the members, their subscriptions and
// holdings, so any leader computes the same.
func stickyAssign(members []groupMember, counts map[string]int) map[string]map[string][]int {
	members = slices.Clone(members)
	slices.SortFunc(members, func(a, b groupMember) int { return cmp.Compare(a.id, b.id) })
	out := map[string]map[string][]int{}
	total := map[string]int{} // partitions assigned so far, all topics
	for _, m := range members {
		out[m.id] = map[string][]int{}
	}
	topics := make([]string, 0, len(counts))
	for t := range counts {
		topics = append(topics, t)
	}
	slices.Sort(topics)
	for _, topic := range topics {
		n := counts[topic]
		var eligible []groupMember
		for _, m := range members {
			if slices.Contains(m.topics, topic) {
				eligible = append(eligible, m)
			}
		}
		if len(eligible) == 0 || n == 0 {
			continue
		}
		// Who holds what: a partition claimed twice (cannot happen in a
		// healthy group) stays with the first claimant.
		owner := map[int]string{}
		held := map[string][]int{}
		for _, m := range eligible {
			for _, id := range m.owned[topic] {
				if _, dup := owner[id]; dup || id < 0 || id >= n {
					continue
				}
				owner[id] = m.id
				held[m.id] = append(held[m.id], id)
			}
		}
		// Quotas: q each, and q+1 for `extra` members, preferably those
		// that hold more than q already, then those with the fewest
		// partitions so far.
		q, extra := n/len(eligible), n%len(eligible)
		order := slices.Clone(eligible)
		slices.SortStableFunc(order, func(a, b groupMember) int {
			ha, hb := len(held[a.id]) > q, len(held[b.id]) > q
			switch {
			case ha && !hb:
				return -1
			case hb && !ha:
				return 1
			}
			return total[a.id] - total[b.id]
		})
		quota := map[string]int{}
		for i, m := range order {
			quota[m.id] = q
			if i < extra {
				quota[m.id]++
			}
		}
		// Each keeps what it holds up to its quota; the rest is free.
		taken := map[int]bool{}
		for _, m := range eligible {
			ids := slices.Sorted(slices.Values(held[m.id]))
			keep := ids[:min(len(ids), quota[m.id])]
			out[m.id][topic] = append(out[m.id][topic], keep...)
			for _, id := range keep {
				taken[id] = true
			}
		}
		var free []int
		for id := range n {
			if !taken[id] {
				free = append(free, id)
			}
		}
		for _, m := range eligible {
			for len(out[m.id][topic]) < quota[m.id] && len(free) > 0 {
				id := free[0]
				free = free[1:]
				if o, ok := owner[id]; ok && o != m.id {
					// Its owner finishes it first: counted in the quota,
					// given next time.
					quota[m.id]--
					continue
				}
				out[m.id][topic] = append(out[m.id][topic], id)
			}
		}
		for _, m := range eligible {
			slices.Sort(out[m.id][topic])
			total[m.id] += len(out[m.id][topic])
			if len(out[m.id][topic]) == 0 {
				delete(out[m.id], topic)
			}
		}
	}
	return out
}
