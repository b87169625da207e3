package connector

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"
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
