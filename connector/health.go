package connector

import (
	"context"
	"sort"
	"time"

	"github.com/pqsink/pqsink/connector/health"
)

// The sink's side of its readiness (package connector/health): the state
// it keeps for /readyz, handed to health's rules, its topics' watch and
// its store's probe.

// watchTopics checks, for a list of topics (not a regex), that each exists
// on the brokers (health.Topics): at once, then every
// kafka.topic_refresh, sooner while some are missing; once every topic
// exists the member rejoins (rejoin).
func (s *Sink) watchTopics(ctx context.Context, topics []string, rejoin func()) {
	health.Topics{Names: topics, List: s.kafka.topics, Refresh: s.cfg.Kafka.TopicRefresh, Timeout: CheckTimeout,
		Err: &s.topicsErr, Rejoin: rejoin, Log: s.log}.Run(ctx)
}

// Ready says why the sink is not ready, or nil.
func (s *Sink) Ready() error {
	st := health.Status{
		Kafka:  s.kafkaErr.Load(),
		Joined: s.joined.Load(),
		Topics: s.topicsErr.Load(),
		Bucket: s.bucketErr.Load(),
		Store:  s.storeErr.Load(),
		Upload: s.uploadErr.Load(),
		Stalled: func(now time.Time) []health.Stall {
			var out []health.Stall
			for _, p := range s.stalled(now) {
				out = append(out, health.Stall{Topic: p.topic, Partition: p.id, Lag: p.lag.Load(), AdvancedAt: time.Unix(0, p.advancedAt.Load())})
			}
			return out
		},
		Failed: s.Failed,
	}
	if since := s.uploadFailingSince.Load(); since != 0 {
		st.UploadFailingSince = time.Unix(0, since)
	}
	if s.tables != nil {
		st.Tables, st.CommitInterval = s.tables.Failing, s.cfg.Table.CommitInterval
	}
	return st.Err(time.Now())
}

// uploadFailed notes a failed upload for /readyz.
func (s *Sink) uploadFailed(err error) {
	s.uploadErr.Store(&err)
	s.uploadFailingSince.CompareAndSwap(0, time.Now().UnixNano())
}

// stalled returns the partitions with lag that have not reached a new
// offset for metrics.stall_timeout, longest stalled first.
func (s *Sink) stalled(now time.Time) []*partition {
	limit := s.cfg.Metrics.StallTimeout
	if limit <= 0 {
		return nil
	}
	var out []*partition
	s.mu.Lock()
	for p := range s.consuming {
		if p.lag.Load() > 0 && now.Sub(time.Unix(0, p.advancedAt.Load())) >= limit {
			out = append(out, p)
		}
	}
	s.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].advancedAt.Load() < out[j].advancedAt.Load() })
	return out
}

// probeStore checks every two seconds that the store answers, for /readyz
// (health.StoreProbe).
func (s *Sink) probeStore(ctx context.Context) {
	health.StoreProbe{Store: s.store, URL: s.cfg.Store.URL, Timeout: CheckTimeout, BucketErr: &s.bucketErr, StoreErr: &s.storeErr, Log: s.log}.Run(ctx)
}
