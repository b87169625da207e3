package health

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync/atomic"
	"time"

	"github.com/pqsink/pqsink/internal/backoff"
)

// Topics watches that each of a list of topics (not a regex) exists on
// the brokers.
type Topics struct {
	// Names are the configured topics.
	Names []string
	// List returns the brokers' topics (asking for their metadata, which
	// creates none).
	List func(ctx context.Context) ([]string, error)
	// Refresh is kafka.topic_refresh; Timeout bounds one List.
	Refresh, Timeout time.Duration
	// Err is where the watch stores which topics are missing, for
	// /readyz; nil while every topic exists.
	Err *atomic.Pointer[error]
	// Rejoin is called once every topic exists after some were missing:
	// the member rejoins, so that the group's leader assigns the new
	// topic's partitions.
	Rejoin func()
	Log    *slog.Logger
}

// Run checks the topics at once, then every Refresh, sooner while some
// are missing, until ctx ends. A missing topic is an ERROR and makes
// /readyz say so.
func (w Topics) Run(ctx context.Context) {
	var flog FailureLog
	missing := false
	for attempt := 1; ; attempt++ {
		mctx, cancel := context.WithTimeout(ctx, w.Timeout)
		err := Missing(mctx, w.List, w.Names)
		cancel()
		if ctx.Err() != nil {
			return
		}
		var unknown *UnknownTopics
		switch {
		case errors.As(err, &unknown):
			SetErr(w.Err, err)
			flog.Failed(w.Log, "topics do not exist; their partitions are not consumed", err, "topics", unknown.Names)
			missing = true
		case err != nil:
			// The brokers do not answer: the membership reports that.
		default:
			SetErr(w.Err, nil)
			flog.Recovered(w.Log, "every topic exists now", "topics", w.Names)
			if missing {
				missing = false
				w.Rejoin()
			}
		}
		wait := w.Refresh
		if missing {
			wait = min(wait, backoff.Doubling(time.Second, attempt, 30*time.Second))
		} else {
			attempt = 0
		}
		if !backoff.Sleep(ctx, wait) {
			return
		}
	}
}

// UnknownTopics are configured topics the brokers do not have.
type UnknownTopics struct{ Names []string }

func (u *UnknownTopics) Error() string {
	return fmt.Sprintf("kafka.topics: topics %q do not exist on the brokers", u.Names)
}

// Missing asks the brokers for their topics with list; the error is an
// *UnknownTopics when some of topics do not exist.
func Missing(ctx context.Context, list func(context.Context) ([]string, error), topics []string) error {
	all, err := list(ctx)
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
		return &UnknownTopics{Names: missing}
	}
	return nil
}
