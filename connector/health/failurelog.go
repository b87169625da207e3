// Package health is what the sink's readiness (/readyz) is judged on and
// how its outages are told: the readiness rules over the state the sink
// keeps (Status), the watch of the configured topics (Topics), the probe
// of the store (StoreProbe), and the log of a failure that repeats
// (FailureLog) with the backoff of its retries. It knows nothing of the
// sink's partitions: the sink hands it what it needs and reads the
// errors it stores.
package health

import (
	"log/slog"
	"sync"
	"time"
)

// FailureLog logs a failure that repeats, as an outage's retries do: at
// the first failure, then at the 2nd, 4th, 8th... with the count, so that
// an outage of hours leaves a dozen lines rather than one per retry; and
// one line when it ends. It is safe for concurrent use.
type FailureLog struct {
	mu    sync.Mutex
	n     int64
	since time.Time
}

// Failed counts a failure and logs it at ERROR when its count is a power
// of two.
func (f *FailureLog) Failed(log *slog.Logger, msg string, err error, args ...any) {
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

// Recovered ends a run of failures, with one line saying so.
func (f *FailureLog) Recovered(log *slog.Logger, msg string, args ...any) {
	f.mu.Lock()
	n, since := f.n, f.since
	f.n = 0
	f.mu.Unlock()
	if n > 0 {
		log.Info(msg, append(args, "failures", n, "failed_for", time.Since(since).Round(time.Second))...)
	}
}

// SetErr stores err for /readyz, or clears it when nil.
func SetErr(p interface{ Store(*error) }, err error) {
	if err == nil {
		p.Store(nil)
		return
	}
	p.Store(&err)
}
