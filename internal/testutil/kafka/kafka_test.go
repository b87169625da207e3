package kafka

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestKafkaGoAgainstKfake proves the harness with the production client:
// kafka-go produces, consumes in a consumer group, commits, and a second
// reader of the group resumes after the committed offsets.
func TestKafkaGoAgainstKfake(t *testing.T) {
	c := Start(t, 3, "events")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	w := &kafkago.Writer{Addr: kafkago.TCP(c.Brokers...), Topic: "events", Balancer: &kafkago.Hash{}, BatchTimeout: 10 * time.Millisecond}
	const n = 300
	var msgs []kafkago.Message
	for i := 0; i < n; i++ {
		msgs = append(msgs, kafkago.Message{Key: []byte(fmt.Sprint(i % 17)), Value: []byte(fmt.Sprintf(`{"i":%d}`, i))})
	}
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		t.Fatalf("produce: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	read := func(limit int) map[string]bool {
		r := kafkago.NewReader(kafkago.ReaderConfig{Brokers: c.Brokers, GroupID: "sink", Topic: "events", MaxWait: 50 * time.Millisecond})
		defer r.Close()
		seen := map[string]bool{}
		for len(seen) < limit {
			m, err := r.FetchMessage(ctx)
			if err != nil {
				t.Fatalf("fetch after %d messages: %v", len(seen), err)
			}
			seen[string(m.Value)] = true
			if err := r.CommitMessages(ctx, m); err != nil {
				t.Fatalf("commit: %v", err)
			}
		}
		return seen
	}
	first := read(n / 2)
	rest := map[string]bool{}
	r := kafkago.NewReader(kafkago.ReaderConfig{Brokers: c.Brokers, GroupID: "sink", Topic: "events", MaxWait: 50 * time.Millisecond})
	defer r.Close()
	for len(first)+len(rest) < n {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			t.Fatalf("resume after %d+%d messages: %v", len(first), len(rest), err)
		}
		if first[string(m.Value)] {
			// Per partition, the committed offset is the last message the
			// first reader committed, so nothing it committed comes back.
			t.Fatalf("message %s was committed by the first reader and delivered again", m.Value)
		}
		rest[string(m.Value)] = true
	}
	if len(first)+len(rest) != n {
		t.Fatalf("consumed %d distinct messages, produced %d", len(first)+len(rest), n)
	}
}

// TestLostJoinReplyExpires kills a member while its first join is parked.
// kfake then answers the join on a dead connection, and whether that
// answer counts as delivered is a coin toss (a select between the closed
// connection and a buffered channel); when it does not, kfake arms no
// session timer for the member, yet the leader assigns it its share of the
// partitions and nothing ever rebalances. Within the session timeout, the
// rebalance timeout and a margin, the member that is alive must hold every
// partition again, as it would with Kafka. Six deaths in a row leave the
// coin a chance of 1 in 64 to spare kfake every time.
func TestLostJoinReplyExpires(t *testing.T) {
	const (
		partitions = 4
		deaths     = 6
		session    = time.Second
		rebalance  = 2 * time.Second
		margin     = 5 * time.Second
	)
	c := StartWith(t, []kfake.Opt{kfake.GroupMinSessionTimeout(500 * time.Millisecond)}, partitions, "events")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	group, err := kafkago.NewConsumerGroup(kafkago.ConsumerGroupConfig{
		ID: "lost", Brokers: c.Brokers, Topics: []string{"events"},
		HeartbeatInterval: 100 * time.Millisecond, SessionTimeout: session, RebalanceTimeout: rebalance,
		JoinGroupBackoff: 100 * time.Millisecond, Timeout: 5 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer group.Close()
	held := func(gen *kafkago.Generation) int {
		n := 0
		for _, as := range gen.Assignments {
			n += len(as)
		}
		return n
	}
	gen, err := group.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n := held(gen); n != partitions {
		t.Fatalf("the only member holds %d partitions, want %d", n, partitions)
	}
	for death := range deaths {
		// The live member rejoins only once the other one is dead, so
		// that the rebalance completes with a reply that cannot be
		// delivered.
		dead := make(chan struct{})
		gen.Start(func(ctx context.Context) { <-ctx.Done(); <-dead })

		// The other member joins on a connection of its own, with
		// JoinGroup v2 (no member id round trip), and dies with its join
		// parked.
		conn, err := net.Dial("tcp", c.Brokers[0])
		if err != nil {
			t.Fatal(err)
		}
		join := kmsg.NewPtrJoinGroupRequest()
		join.Version = 2
		join.Group, join.ProtocolType = "lost", "consumer"
		join.SessionTimeoutMillis, join.RebalanceTimeoutMillis = int32(session/time.Millisecond), int32(rebalance/time.Millisecond)
		meta := kmsg.ConsumerMemberMetadata{Topics: []string{"events"}} // version 0, as kafka-go reads it
		join.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: meta.AppendTo(nil)}}
		if _, err := conn.Write(kmsg.NewRequestFormatter(kmsg.FormatterClientID("doomed")).AppendRequest(nil, join, 1)); err != nil {
			t.Fatal(err)
		}
		for {
			g := c.Kfake().GroupInfo("lost")
			if g != nil && g.State == "PreparingRebalance" && len(g.Members) == 2 {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		conn.Close()
		time.Sleep(300 * time.Millisecond)
		died := time.Now()
		close(dead)

		deadline := died.Add(session + rebalance + margin)
		for {
			gctx, gcancel := context.WithDeadline(ctx, deadline)
			gen, err = group.Next(gctx)
			gcancel()
			if err != nil {
				t.Fatalf("death %d: the live member did not hold all %d partitions again within %v: %v (members expired by the harness: %d)",
					death+1, partitions, session+rebalance+margin, err, c.ExpiredSessions())
			}
			n := held(gen)
			t.Logf("death %d: generation %d: the live member holds %d partitions, %v after the death (members expired by the harness: %d)",
				death+1, gen.ID, n, time.Since(died).Round(time.Millisecond), c.ExpiredSessions())
			if n == partitions {
				break
			}
			gen.Start(func(ctx context.Context) { <-ctx.Done() })
		}
	}
}
