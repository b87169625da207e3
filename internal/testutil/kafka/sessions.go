package kafka

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// sessions expires the members of classic consumer groups that kfake
// forgets to expire, as a Kafka broker would.
//
// kfake arms a member's session timer when a reply to it gets through. A
// member that joins for the first time has no timer until its JoinGroup
// reply arrives; if its process dies while the join is parked (waiting for
// the other members), the reply goes to a dead connection, which kfake
// counts as delivered or not by a coin toss (a select between the closed
// connection and a buffered channel), and when not, no timer is armed. The
// leader, alive, syncs; that ends the barrier that would have removed a
// member that never synced, and the group is stable with the dead member
// holding its share of the partitions: nobody consumes them, and nothing
// rebalances, for as long as the broker runs. Kafka schedules every
// member's session expiry when the join phase completes, whether or not
// the reply was delivered; this does the same from outside: a member of a
// stable group that has sent no request (heartbeat, sync, join, commit)
// for longer than the session timeout it asked for is made to leave, which
// kfake handles as Kafka handles an expiry (remove, then rebalance).
//
// Only a member that sends nothing is touched: a live member that
// heartbeats and consumes nothing is left alone, so a stall of the
// client's own is still seen by the tests.
type sessions struct {
	tb      testing.TB
	c       *kfake.Cluster
	brokers []string
	cl      *kgo.Client // for the leaves, connected on first use; only the sweeping goroutine uses it
	expired atomic.Int64

	mu      sync.Mutex
	timeout map[string]time.Duration        // by group: the longest session timeout a member asked for
	seen    map[string]map[string]time.Time // by group and member: the last request from it
}

// sweepEvery is how often the groups are checked.
const sweepEvery = 100 * time.Millisecond

// watchSessions observes the group requests of c and expires silent
// members until the test ends.
func watchSessions(tb testing.TB, c *kfake.Cluster, brokers []string) *sessions {
	s := &sessions{tb: tb, c: c, brokers: brokers, timeout: map[string]time.Duration{}, seen: map[string]map[string]time.Time{}}
	for _, key := range []kmsg.Key{kmsg.JoinGroup, kmsg.SyncGroup, kmsg.Heartbeat, kmsg.OffsetCommit, kmsg.LeaveGroup} {
		c.ControlKey(int16(key), s.observe)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(sweepEvery)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				s.sweep(ctx)
			}
		}
	}()
	tb.Cleanup(func() {
		cancel()
		<-done
		if s.cl != nil {
			s.cl.Close()
		}
	})
	return s
}

// observe notes that a member is alive; it never handles the request.
func (s *sessions) observe(req kmsg.Request) (kmsg.Response, error, bool) {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	switch r := req.(type) {
	case *kmsg.JoinGroupRequest:
		if d := time.Duration(r.SessionTimeoutMillis) * time.Millisecond; d > s.timeout[r.Group] {
			s.timeout[r.Group] = d
		}
		s.touch(r.Group, r.MemberID, now)
	case *kmsg.SyncGroupRequest:
		s.touch(r.Group, r.MemberID, now)
	case *kmsg.HeartbeatRequest:
		s.touch(r.Group, r.MemberID, now)
	case *kmsg.OffsetCommitRequest:
		s.touch(r.Group, r.MemberID, now)
	case *kmsg.LeaveGroupRequest:
		delete(s.seen[r.Group], r.MemberID)
		for _, m := range r.Members {
			delete(s.seen[r.Group], m.MemberID)
		}
	}
	return nil, nil, false
}

// touch records a request of a member; s.mu is held.
func (s *sessions) touch(group, member string, now time.Time) {
	if member == "" {
		return
	}
	if s.seen[group] == nil {
		s.seen[group] = map[string]time.Time{}
	}
	s.seen[group][member] = now
}

// sweep makes the silent members of stable groups leave.
func (s *sessions) sweep(ctx context.Context) {
	s.mu.Lock()
	groups := make([]string, 0, len(s.timeout))
	for g := range s.timeout {
		groups = append(groups, g)
	}
	s.mu.Unlock()
	for _, group := range groups {
		g := s.c.GroupInfo(group)
		if g == nil || g.State != "Stable" {
			continue
		}
		for _, m := range s.silent(g, time.Now()) {
			if s.leave(ctx, group, m) {
				s.expired.Add(1)
				s.tb.Logf("kafka: member %s of group %s sent nothing for its session timeout and kfake kept it: expired it", m, group)
			}
		}
	}
}

// leave makes a member leave its group, as its session expiry would, and
// reports whether it was still there. The client connects on first use: a
// cluster that needs SASL and never has a silent member never sees it.
func (s *sessions) leave(ctx context.Context, group, member string) bool {
	if s.cl == nil {
		cl, err := kgo.NewClient(kgo.SeedBrokers(s.brokers...), kgo.RetryTimeout(2*time.Second))
		if err != nil {
			return false
		}
		s.cl = cl
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req := kmsg.NewPtrLeaveGroupRequest()
	req.Group = group
	req.Members = []kmsg.LeaveGroupRequestMember{{MemberID: member}}
	resp, err := req.RequestWith(ctx, s.cl)
	// Gone meanwhile (kfake's own timer, a leave), or the next sweep
	// tries again.
	return err == nil && resp.ErrorCode == 0 && len(resp.Members) == 1 && resp.Members[0].ErrorCode == 0
}

// silent returns the members of a stable group that have sent nothing for
// longer than the group's session timeout, and forgets the members that
// are gone. A member first seen here counts from now.
func (s *sessions) silent(g *kfake.GroupInfo, now time.Time) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	timeout := s.timeout[g.Group]
	seen := s.seen[g.Group]
	if seen == nil {
		seen = map[string]time.Time{}
		s.seen[g.Group] = seen
	}
	present := map[string]bool{}
	var out []string
	for _, m := range g.Members {
		present[m.MemberID] = true
		last, ok := seen[m.MemberID]
		switch {
		case !ok:
			seen[m.MemberID] = now
		case now.Sub(last) > timeout+timeout/2:
			out = append(out, m.MemberID)
			delete(seen, m.MemberID)
		}
	}
	for m := range seen {
		if !present[m] {
			delete(seen, m)
		}
	}
	return out
}
