// Package kafka starts an in-process Kafka broker for tests: franz-go's
// kfake, which speaks the real Kafka protocol on a random loopback port, so
// tests drive it with the same kafka-go client code as production.
// Test-only.
package kafka

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"
)

// Cluster is a running in-process broker.
type Cluster struct {
	// Brokers are the bootstrap addresses, "127.0.0.1:PORT".
	Brokers  []string
	c        *kfake.Cluster
	sessions *sessions
}

// Start runs a one-broker cluster on a random loopback port, with the given
// topics of partitions partitions each (topics may also be created by
// clients), and stops it when the test ends.
func Start(t testing.TB, partitions int32, topics ...string) *Cluster {
	t.Helper()
	return StartWith(t, nil, partitions, topics...)
}

// StartWith is Start with extra kfake options, such as
// kfake.GroupMinSessionTimeout for tests that kill group members and want
// their sessions to expire quickly.
//
// A member of a consumer group that sends nothing for longer than its
// session timeout is expired even where kfake forgets to (see sessions):
// a member killed while its first join was parked would otherwise keep its
// partitions, unconsumed, until the broker stops.
func StartWith(t testing.TB, extra []kfake.Opt, partitions int32, topics ...string) *Cluster {
	t.Helper()
	opts := []kfake.Opt{kfake.NumBrokers(1), kfake.Ports(0), kfake.AllowAutoTopicCreation(), kfake.DefaultNumPartitions(int(partitions))}
	opts = append(opts, extra...)
	if len(topics) > 0 {
		opts = append(opts, kfake.SeedTopics(partitions, topics...))
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		t.Fatalf("kafka: start in-process broker: %v", err)
	}
	t.Cleanup(c.Close)
	cl := &Cluster{Brokers: c.ListenAddrs(), c: c}
	cl.sessions = watchSessions(t, c, cl.Brokers)
	return cl
}

// Kfake exposes the underlying fake cluster, for tests that inject faults
// (kfake.Cluster.ControlKey and friends).
func (c *Cluster) Kfake() *kfake.Cluster { return c.c }

// ExpiredSessions is how many members the broker kept although they had
// sent nothing for their session timeout, and that the harness expired.
func (c *Cluster) ExpiredSessions() int64 { return c.sessions.expired.Load() }
