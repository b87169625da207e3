// Package group is the sink's membership of its Kafka consumer group:
// joining, heartbeats and leaving (Membership), the assignment protocols
// behind one Balancer interface (Sticky, Range), the partitions held
// across generations (Holdings, which drives the sink's partitions through
// the Pipeline and Partition interfaces), the offset commits of a
// generation (CommitBatcher) and the committed offsets read back. It
// knows nothing of the sink's partition pipeline.
package group

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pqsink/pqsink/internal/backoff"

	"github.com/segmentio/kafka-go"
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
//
// Each protocol is a Balancer; a member offers Sticky, then Range.

// Generation is one generation of the group as this member sees it.
type Generation struct {
	ID         int              // the generation id, which commits carry
	Group      string           // the group's id
	MemberID   string           // this member's id in the generation
	InstanceID string           // this member's instance id, when static
	Protocol   string           // the name of the generation's Balancer
	Assigned   map[string][]int // to this member, by topic, sorted
	// Start is when the rebalance that led to it started.
	Start time.Time

	cooperative bool // Protocol is a cooperative Balancer's
}

// Cooperative says whether partitions are handed over in this generation
// (the sticky protocol), rather than dropped at once (range).
func (g *Generation) Cooperative() bool { return g.cooperative }

// Has says whether the generation assigns the partition to this member.
func (g *Generation) Has(topic string, id int) bool {
	_, ok := slices.BinarySearch(g.Assigned[topic], id)
	return ok
}

// Handler is what a membership drives: the sink's partitions.
type Handler interface {
	// Settle waits, at most until ctx ends, for the partitions being
	// handed over to be finished: uploaded and in their tables. A join
	// sent before would no longer claim them, and the leader could give
	// them to their next owner while their last files are not in the
	// table yet (KIP-429: revocation completes before the rejoin).
	Settle(ctx context.Context)
	// Owned lists the partitions held now, for the join metadata.
	Owned() map[string][]int
	// Assigned starts a generation; ctx ends with the generation.
	Assigned(ctx context.Context, gen *Generation)
	// Lost drops every partition (the member is out of the group) and
	// returns once none is held.
	Lost()
}

// hbResult is why the heartbeats of a generation ended.
type hbResult int

const (
	hbRejoin  hbResult = iota // a rebalance started, or this member asked for one
	hbLost                    // the member is no longer in the group
	hbStopped                 // the sink stopped and let every partition go
)

// Options is what a Membership needs.
type Options struct {
	// Client is the sink's Kafka client: its Addr names the brokers, its
	// Transport carries the group's requests.
	Client *kafka.Client
	// Config is the kafka section: the group, its timeouts and heartbeat
	// interval, the brokers (for the log).
	Config *config.Kafka
	// Log receives the membership's warnings.
	Log *slog.Logger
	// Topics are the topics subscribed to at first (Subscribe changes
	// them).
	Topics []string
	// InstanceID makes the member static (kafka.instance_id), when set.
	InstanceID string
	// Balancers are the protocols offered, preferred first; nil offers
	// Sticky, then Range.
	Balancers []Balancer
	// Report is told of each failure to join or heartbeat (with what was
	// tried), and of the next success (nil error); nil when nobody
	// listens.
	Report func(msg string, err error)
}

// Membership is the sink's membership of the consumer group.
type Membership struct {
	meta       *kafka.Client // the sink's: coordinator, group and topic metadata
	client     *kafka.Client // for the group requests: its timeout allows a join's wait
	cfg        *config.Kafka
	log        *slog.Logger
	h          Handler
	instanceID string
	balancers  []Balancer
	report     func(msg string, err error)

	mu       sync.Mutex
	topics   []string
	rejoinCh chan struct{} // a rejoin is asked for

	coord    net.Addr // the group's coordinator, nil until found
	memberID string
}

// fail reports a failed join or heartbeat.
func (m *Membership) fail(msg string, err error) {
	if m.report != nil {
		m.report(msg, err)
	}
}

// ok ends a run of failures.
func (m *Membership) ok() {
	if m.report != nil {
		m.report("", nil)
	}
}

// NewMembership returns the membership that Run runs, driving h.
func NewMembership(o Options, h Handler) *Membership {
	c := *o.Client
	c.Timeout = o.Config.RebalanceTimeout + o.Config.SessionTimeout + 10*time.Second
	b := o.Balancers
	if b == nil {
		b = []Balancer{Sticky{}, Range{}}
	}
	return &Membership{
		meta: o.Client, client: &c, cfg: o.Config, log: o.Log, h: h, instanceID: o.InstanceID,
		balancers: b, report: o.Report, topics: o.Topics, rejoinCh: make(chan struct{}, 1),
	}
}

// balancer is the Balancer of a protocol name, nil when none offered.
func (m *Membership) balancer(name string) Balancer {
	for _, b := range m.balancers {
		if b.Name() == name {
			return b
		}
	}
	return nil
}

// Rejoin asks for a rebalance: the member's holdings changed.
func (m *Membership) Rejoin() {
	select {
	case m.rejoinCh <- struct{}{}:
	default:
	}
}

// Subscribe changes the topics of the member and rejoins.
func (m *Membership) Subscribe(topics []string) {
	m.mu.Lock()
	m.topics = topics
	m.mu.Unlock()
	m.Rejoin()
}

// Run is the membership: it joins, hands each generation to the handler
// and heartbeats, until stopped is closed (the sink stopped and every
// partition is let go). Then it leaves the group, unless it is a static
// member, whose partitions wait for it for the session timeout. ctx bounds
// the requests; it is not the sink's (a stopping sink still commits as a
// member).
func (m *Membership) Run(ctx context.Context, stopped <-chan struct{}) {
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
			t := time.NewTimer(backoff.Doubling(time.Second, failures, 30*time.Second))
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
		gen.Start, start = start, time.Time{}
		gctx, endGen := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			m.h.Assigned(gctx, gen)
		}()
		res := m.heartbeat(ctx, gen, stopped)
		endGen()
		<-done
		if res == hbLost {
			m.h.Lost()
		}
		if res == hbStopped {
			return
		}
	}
}

// join joins the group and syncs: it returns the next generation.
func (m *Membership) join(ctx context.Context, stopped <-chan struct{}) (*Generation, error) {
	for attempt := 0; ; attempt++ {
		if attempt > 0 && !backoff.Sleep(ctx, min(time.Duration(attempt)*100*time.Millisecond, time.Second)) {
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
		m.h.Settle(sctx)
		cancel()
		select {
		case <-m.rejoinCh: // this join is the rejoin asked for
		default:
		}
		m.mu.Lock()
		topics := m.topics
		m.mu.Unlock()
		owned := m.h.Owned()
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
			m.h.Lost()
			continue
		case errors.Is(err, kafka.NotCoordinatorForGroup), errors.Is(err, kafka.GroupCoordinatorNotAvailable), errors.Is(err, kafka.RebalanceInProgress):
			m.coord = nil
			continue
		default:
			return nil, fmt.Errorf("joining group %s: %w", m.cfg.Group, err)
		}
		m.memberID = resp.MemberID
		var assignments []kafka.SyncGroupRequestAssignment
		b := m.balancer(resp.ProtocolName)
		if b == nil {
			return nil, fmt.Errorf("joining group %s: the coordinator chose protocol %q, which this member does not offer", m.cfg.Group, resp.ProtocolName)
		}
		if resp.LeaderID == resp.MemberID {
			if assignments, err = m.assign(ctx, b, resp.Members); err != nil {
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
			m.h.Lost()
			continue
		default:
			m.coord = nil
			return nil, fmt.Errorf("syncing group %s: %w", m.cfg.Group, err)
		}
		gen := &Generation{
			ID: resp.GenerationID, Group: m.cfg.Group, MemberID: m.memberID, InstanceID: m.instanceID,
			Protocol: resp.ProtocolName, Assigned: map[string][]int{}, cooperative: b.Cooperative(),
		}
		for topic, ids := range sresp.Assignment.AssignedPartitions {
			if len(ids) > 0 {
				gen.Assigned[topic] = slices.Sorted(slices.Values(ids))
			}
		}
		for topic, ids := range restored {
			for _, id := range ids {
				if !gen.Has(topic, id) {
					// Claimed, not held, and withheld from their new owner
					// until this member rejoins without them.
					m.Rejoin()
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
func (m *Membership) previousJoin(ctx context.Context, topics []string) map[string][]int {
	resp, err := m.meta.DescribeGroups(ctx, &kafka.DescribeGroupsRequest{GroupIDs: []string{m.cfg.Group}})
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
func (m *Membership) findCoordinator(ctx context.Context) error {
	if m.coord != nil {
		return nil
	}
	resp, err := m.meta.FindCoordinator(ctx, &kafka.FindCoordinatorRequest{Key: m.cfg.Group, KeyType: kafka.CoordinatorKeyTypeConsumer})
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
func (m *Membership) heartbeat(ctx context.Context, gen *Generation, stopped <-chan struct{}) hbResult {
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
			Addr: m.coord, GroupID: m.cfg.Group, GenerationID: int32(gen.ID), MemberID: gen.MemberID, GroupInstanceID: m.instanceID,
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
			m.log.Warn("consumer group: this member is no longer in the group; its partitions are dropped", "group", m.cfg.Group, "generation", gen.ID, "error", err)
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
// the answer's error. TestMembershipHandover pins this against a
// broker (the heartbeats must see the rebalances), so that a kafka-go
// that fixes the order is noticed.
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
func (m *Membership) leave() {
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
	Members      []Member
}

// joinGroup sends a JoinGroup, offering each Balancer's protocol with
// its metadata. It goes through kafka-go's protocol package, not
// kafka.Client.JoinGroup, which fails on the join metadata of kafka-go's
// own ConsumerGroup (the members of earlier releases): it reads every
// subscription as version 1, with the owned partitions that a version 0
// subscription does not have.
func (m *Membership) joinGroup(ctx context.Context, topics []string, owned map[string][]int) (*joinResponse, error) {
	protocols := make([]joingroup.RequestProtocol, 0, len(m.balancers))
	for _, b := range m.balancers {
		md, err := b.Metadata(topics, owned)
		if err != nil {
			return nil, fmt.Errorf("encoding the join metadata of %s: %w", b.Name(), err)
		}
		protocols = append(protocols, joingroup.RequestProtocol{Name: b.Name(), Metadata: md})
	}
	ctx, cancel := context.WithTimeout(ctx, m.client.Timeout)
	defer cancel()
	msg, err := m.client.Transport.RoundTrip(ctx, m.coord, &joingroup.Request{
		GroupID: m.cfg.Group, SessionTimeoutMS: int32(m.cfg.SessionTimeout.Milliseconds()), RebalanceTimeoutMS: int32(m.cfg.RebalanceTimeout.Milliseconds()),
		MemberID: m.memberID, GroupInstanceID: m.instanceID, ProtocolType: "consumer", Protocols: protocols,
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
	b := m.balancer(r.ProtocolName)
	for _, mem := range r.Members {
		if b == nil {
			break // join refuses the generation
		}
		topics, owned, err := b.Decode(mem.Metadata)
		if err != nil {
			return nil, fmt.Errorf("the join metadata of member %s: %w", mem.MemberID, err)
		}
		out.Members = append(out.Members, Member{ID: mem.MemberID, Topics: topics, Owned: owned})
	}
	return out, nil
}

// assign computes the generation's assignment as its leader, with b.
func (m *Membership) assign(ctx context.Context, b Balancer, members []Member) ([]kafka.SyncGroupRequestAssignment, error) {
	topics := map[string]bool{}
	for _, mem := range members {
		for _, t := range mem.Topics {
			topics[t] = true
		}
	}
	counts, err := m.partitionCounts(ctx, topics)
	if err != nil {
		return nil, err
	}
	plan := b.Assign(members, counts)
	out := make([]kafka.SyncGroupRequestAssignment, 0, len(members))
	for _, mem := range members {
		out = append(out, kafka.SyncGroupRequestAssignment{MemberID: mem.ID, Assignment: kafka.GroupProtocolAssignment{AssignedPartitions: plan[mem.ID]}})
	}
	return out, nil
}

// partitionCounts reads the number of partitions of each topic.
func (m *Membership) partitionCounts(ctx context.Context, topics map[string]bool) (map[string]int, error) {
	names := make([]string, 0, len(topics))
	for t := range topics {
		names = append(names, t)
	}
	resp, err := m.meta.Metadata(ctx, &kafka.MetadataRequest{Topics: names})
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
