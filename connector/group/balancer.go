package group

import (
	"cmp"
	"maps"
	"slices"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/protocol"
	"github.com/segmentio/kafka-go/protocol/consumer"
)

// The protocols' names in JoinGroup.
const (
	ProtocolSticky = "pqsink-cooperative-sticky"
	ProtocolRange  = "range"
)

// Balancer is one assignment protocol that a member offers when it joins:
// the join metadata it sends, how the leader reads the members' metadata,
// and the assignment the leader computes. The coordinator chooses the
// first protocol, in the order of the first member's offer, that every
// member offers.
type Balancer interface {
	// Name is the protocol's name in JoinGroup.
	Name() string
	// Cooperative says whether a partition that changes owner is handed
	// over (finished by its owner, then given to the next) rather than
	// dropped at once.
	Cooperative() bool
	// Metadata encodes a member's subscription: its topics and the
	// partitions it holds.
	Metadata(topics []string, owned map[string][]int) ([]byte, error)
	// Decode reads a member's metadata as the protocol's members write it.
	Decode(metadata []byte) (topics []string, owned map[string][]int, err error)
	// Assign computes the assignment by member id, then topic, from the
	// members and the number of partitions of each topic. Any leader must
	// compute the same from the same members.
	Assign(members []Member, counts map[string]int) map[string]map[string][]int
}

// Member is a member of the group as the leader sees it.
type Member struct {
	ID     string
	Topics []string
	Owned  map[string][]int // the partitions it holds, by topic
}

// Sticky is the cooperative sticky protocol (see Membership): each
// partition stays with its holder as far as the balance allows, and one
// that changes owner is withheld until its holder has finished it.
type Sticky struct{}

// Name implements Balancer.
func (Sticky) Name() string { return ProtocolSticky }

// Cooperative implements Balancer: partitions are handed over.
func (Sticky) Cooperative() bool { return true }

// Metadata implements Balancer: a subscription of the latest version,
// with the partitions held.
func (Sticky) Metadata(topics []string, owned map[string][]int) ([]byte, error) {
	sub := consumer.Subscription{Version: consumer.MaxVersionSupported, Topics: topics}
	for _, topic := range slices.Sorted(maps.Keys(owned)) {
		tp := consumer.TopicPartition{Topic: topic}
		for _, id := range owned[topic] {
			tp.Partitions = append(tp.Partitions, int32(id))
		}
		sub.OwnedPartitions = append(sub.OwnedPartitions, tp)
	}
	return protocol.Marshal(consumer.MaxVersionSupported, sub)
}

// Decode implements Balancer: the latest version, or else version 0.
func (Sticky) Decode(md []byte) ([]string, map[string][]int, error) {
	var s consumer.Subscription
	if protocol.Unmarshal(md, consumer.MaxVersionSupported, &s) != nil {
		s = consumer.Subscription{}
		if err := protocol.Unmarshal(md, 0, &s); err != nil {
			return nil, nil, err
		}
	}
	return s.Topics, ownedOf(s), nil
}

// Assign implements Balancer with stickyAssign.
func (Sticky) Assign(members []Member, counts map[string]int) map[string]map[string][]int {
	return stickyAssign(members, counts)
}

// Range is the range protocol of kafka-go's eager consumer group, which
// the coordinator chooses while a member of an older release (which
// offers only that one) is in the group: partitions move at once, and
// their old owner drops them.
type Range struct{}

// Name implements Balancer.
func (Range) Name() string { return ProtocolRange }

// Cooperative implements Balancer: partitions are dropped.
func (Range) Cooperative() bool { return false }

// Metadata implements Balancer. It is what kafka-go's ConsumerGroup
// writes and reads (version 1 without owned partitions: it refuses bytes
// it does not read), so that a member of an earlier release can lead a
// group that runs range.
func (Range) Metadata(topics []string, _ map[string][]int) ([]byte, error) {
	return protocol.Marshal(0, consumer.Subscription{Version: 1, Topics: topics, UserData: []byte{}})
}

// Decode implements Balancer.
func (Range) Decode(md []byte) ([]string, map[string][]int, error) {
	var s consumer.Subscription
	if err := protocol.Unmarshal(md, 0, &s); err != nil {
		return nil, nil, err
	}
	return s.Topics, ownedOf(s), nil
}

// Assign implements Balancer with rangeAssign.
func (Range) Assign(members []Member, counts map[string]int) map[string]map[string][]int {
	return rangeAssign(members, counts)
}

// ownedOf returns the partitions a subscription says its member holds.
func ownedOf(s consumer.Subscription) map[string][]int {
	owned := map[string][]int{}
	for _, tp := range s.OwnedPartitions {
		for _, id := range tp.Partitions {
			owned[tp.Topic] = append(owned[tp.Topic], int(id))
		}
	}
	return owned
}

// rangeAssign is kafka-go's range assignment, for a group that runs the
// range protocol (members of an older release among them).
func rangeAssign(members []Member, counts map[string]int) map[string]map[string][]int {
	gm := make([]kafka.GroupMember, len(members))
	for i, m := range members {
		gm[i] = kafka.GroupMember{ID: m.ID, Topics: m.Topics}
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
func stickyAssign(members []Member, counts map[string]int) map[string]map[string][]int {
	members = slices.Clone(members)
	slices.SortFunc(members, func(a, b Member) int { return cmp.Compare(a.ID, b.ID) })
	out := map[string]map[string][]int{}
	total := map[string]int{} // partitions assigned so far, all topics
	for _, m := range members {
		out[m.ID] = map[string][]int{}
	}
	topics := make([]string, 0, len(counts))
	for t := range counts {
		topics = append(topics, t)
	}
	slices.Sort(topics)
	for _, topic := range topics {
		n := counts[topic]
		var eligible []Member
		for _, m := range members {
			if slices.Contains(m.Topics, topic) {
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
			for _, id := range m.Owned[topic] {
				if _, dup := owner[id]; dup || id < 0 || id >= n {
					continue
				}
				owner[id] = m.ID
				held[m.ID] = append(held[m.ID], id)
			}
		}
		// Quotas: q each, and q+1 for `extra` members, preferably those
		// that hold more than q already, then those with the fewest
		// partitions so far.
		q, extra := n/len(eligible), n%len(eligible)
		order := slices.Clone(eligible)
		slices.SortStableFunc(order, func(a, b Member) int {
			ha, hb := len(held[a.ID]) > q, len(held[b.ID]) > q
			switch {
			case ha && !hb:
				return -1
			case hb && !ha:
				return 1
			}
			return total[a.ID] - total[b.ID]
		})
		quota := map[string]int{}
		for i, m := range order {
			quota[m.ID] = q
			if i < extra {
				quota[m.ID]++
			}
		}
		// Each keeps what it holds up to its quota; the rest is free.
		taken := map[int]bool{}
		for _, m := range eligible {
			ids := slices.Sorted(slices.Values(held[m.ID]))
			keep := ids[:min(len(ids), quota[m.ID])]
			out[m.ID][topic] = append(out[m.ID][topic], keep...)
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
			for len(out[m.ID][topic]) < quota[m.ID] && len(free) > 0 {
				id := free[0]
				free = free[1:]
				if o, ok := owner[id]; ok && o != m.ID {
					// Its owner finishes it first: counted in the quota,
					// given next time.
					quota[m.ID]--
					continue
				}
				out[m.ID][topic] = append(out[m.ID][topic], id)
			}
		}
		for _, m := range eligible {
			slices.Sort(out[m.ID][topic])
			total[m.ID] += len(out[m.ID][topic])
			if len(out[m.ID][topic]) == 0 {
				delete(out[m.ID], topic)
			}
		}
	}
	return out
}
