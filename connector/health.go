package connector

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/pqsink/pqsink/archive"
	"github.com/pqsink/pqsink/objstore"
)

// failureLog logs a failure that repeats, as an outage's retries do: at
// the first failure, then at the 2nd, 4th, 8th... with the count, so that
// an outage of hours leaves a dozen lines rather than one per retry; and
// one line when it ends. It is safe for concurrent use.
type failureLog struct {
	mu    sync.Mutex
	n     int64
	since time.Time
}

// failed counts a failure and logs it at ERROR when its count is a power
// of two.
func (f *failureLog) failed(log *slog.Logger, msg string, err error, args ...any) {
	f.mu.Lock()
	f.n++
	n, since := f.n, f.since
	if n == 1 {
		f.since, since = time.Now(), time.Now()
	}
	f.mu.Unlock()
	if n&(n-1) == 0 {
		log.Error(msg, append(args, "error", err, "failures", n, "failing_for", time.Since(since).Round(time.Second))...)
	}
}

// recovered ends a run of failures, with one line saying so.
func (f *failureLog) recovered(log *slog.Logger, msg string, args ...any) {
	f.mu.Lock()
	n, since := f.n, f.since
	f.n = 0
	f.mu.Unlock()
	if n > 0 {
		log.Info(msg, append(args, "failures", n, "failed_for", time.Since(since).Round(time.Second))...)
	}
}

// backoff is the wait before retry attempt n (from 1): one second,
// doubling, at most limit.
func backoff(n int, limit time.Duration) time.Duration {
	d := time.Second
	for i := 1; i < n && d < limit; i++ {
		d *= 2
	}
	return min(d, limit)
}

// setErr stores err for /readyz, or clears it when nil.
func setErr(p interface{ Store(*error) }, err error) {
	if err == nil {
		p.Store(nil)
		return
	}
	p.Store(&err)
}

// watchTopics checks, for a list of topics (not a regex), that each exists
// on the brokers: at once, then every kafka.topic_refresh, sooner while
// some are missing. A missing topic is an ERROR and makes /readyz say so;
// once every topic exists the member rejoins (rejoin), so that the
// group's leader assigns the new topic's partitions.
func (s *Sink) watchTopics(ctx context.Context, topics []string, rejoin func()) {
	var flog failureLog
	missing := false
	for attempt := 1; ; attempt++ {
		mctx, cancel := context.WithTimeout(ctx, CheckTimeout)
		err := s.missingTopics(mctx, topics)
		cancel()
		if ctx.Err() != nil {
			return
		}
		var unknown *unknownTopics
		switch {
		case errors.As(err, &unknown):
			setErr(&s.topicsErr, err)
			flog.failed(s.log, "topics do not exist; their partitions are not consumed", err, "topics", unknown.names)
			missing = true
		case err != nil:
			// The brokers do not answer: the membership reports that.
		default:
			setErr(&s.topicsErr, nil)
			flog.recovered(s.log, "every topic exists now", "topics", topics)
			if missing {
				missing = false
				rejoin()
			}
		}
		wait := s.cfg.Kafka.TopicRefresh
		if missing {
			wait = min(wait, backoff(attempt, 30*time.Second))
		} else {
			attempt = 0
		}
		if !sleep(ctx, wait) {
			return
		}
	}
}

// unknownTopics are configured topics the brokers do not have.
type unknownTopics struct{ names []string }

func (u *unknownTopics) Error() string {
	return fmt.Sprintf("kafka.topics: topics %q do not exist on the brokers", u.names)
}

// missingTopics asks the brokers for the topics' metadata (which creates
// none); the error is an *unknownTopics when some do not exist.
func (s *Sink) missingTopics(ctx context.Context, topics []string) error {
	all, err := s.kafka.topics(ctx)
	if err != nil {
		return err
	}
	var missing []string
	for _, t := range topics {
		if !slices.Contains(all, t) {
			missing = append(missing, t)
		}
	}
	if len(missing) > 0 {
		return &unknownTopics{names: missing}
	}
	return nil
}

// Ready says why the sink is not ready, or nil.
func (s *Sink) Ready() error {
	if err := s.kafkaErr.Load(); err != nil {
		return fmt.Errorf("kafka unreachable: %v", *err)
	}
	if !s.joined.Load() {
		return errors.New("not a member of the consumer group yet")
	}
	if err := s.topicsErr.Load(); err != nil {
		return *err
	}
	if err := s.bucketErr.Load(); err != nil {
		return fmt.Errorf("store refuses a listing (store.url): %v", *err)
	}
	if err := s.storeErr.Load(); err != nil {
		return fmt.Errorf("store unreachable: %v", *err)
	}
	now := time.Now()
	if since := s.uploadFailingSince.Load(); since != 0 && now.Sub(time.Unix(0, since)) >= uploadFailingFor {
		msg := "uploads have failed"
		if err := s.uploadErr.Load(); err != nil {
			msg = fmt.Sprintf("uploads have failed: %v", *err)
		}
		return fmt.Errorf("%s, every one for %s", msg, now.Sub(time.Unix(0, since)).Round(time.Second))
	}
	if s.tables != nil {
		// Two intervals: one failed commit that the next one mends is
		// not an outage.
		if err := s.tables.Failing(now, max(uploadFailingFor, 2*s.cfg.Table.CommitInterval)); err != nil {
			return err
		}
	}
	if stalled := s.stalled(now); len(stalled) > 0 {
		p := stalled[0]
		return fmt.Errorf("partition %s[%d] has %d records of lag and has not reached a new offset for %s (metrics.stall_timeout); %d partitions stalled",
			p.topic, p.id, p.lag.Load(), now.Sub(time.Unix(0, p.advancedAt.Load())).Round(time.Second), len(stalled))
	}
	failed := s.Failed()
	if len(failed) > 0 {
		keys := make([]string, 0, len(failed))
		for k := range failed {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		return fmt.Errorf("partition %s stopped: %v", keys[0], failed[keys[0]])
	}
	return nil
}

// uploadFailingFor is how long uploads must fail, every one, before
// /readyz says not ready: one failure is retried, a run of them is an
// outage.
const uploadFailingFor = 30 * time.Second

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

// probeStore checks every two seconds that the store answers, for
// /readyz: a HEAD of a key that need not exist. With the failed requests
// of the sink itself, an outage shows within a few seconds. A HEAD cannot
// tell a missing bucket from a missing key: every listEvery probes (the
// first one too) lists at most one key, which can; a failed listing is an
// ERROR (logged at growing intervals while it lasts) and keeps /readyz
// not ready until a listing succeeds.
func (s *Sink) probeStore(ctx context.Context) {
	const listEvery = 15
	var flog failureLog
	for n := 0; ; n++ {
		if n%listEvery == 0 || s.bucketErr.Load() != nil {
			lctx, cancel := context.WithTimeout(ctx, CheckTimeout)
			err := listOne(lctx, s.store)
			cancel()
			if ctx.Err() != nil {
				return
			}
			setErr(&s.bucketErr, err)
			if err != nil {
				flog.failed(s.log, "the store refuses a listing (missing bucket or refused credentials?); files cannot be uploaded", err, "store", s.cfg.Store.URL)
			} else {
				flog.recovered(s.log, "the store lists again", "store", s.cfg.Store.URL)
			}
		}
		pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		_, err := s.store.Head(pctx, archive.ProbeKey)
		cancel()
		if ctx.Err() != nil {
			return
		}
		if err == nil || errors.Is(err, objstore.ErrNotExist) {
			s.storeErr.Store(nil)
		} else {
			s.storeErr.Store(&err)
		}
		if !sleep(ctx, 2*time.Second) {
			return
		}
	}
}
