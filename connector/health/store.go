package health

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/pqsink/pqsink/internal/backoff"

	"github.com/pqsink/pqsink/archive"
	"github.com/pqsink/pqsink/objstore"
)

// StoreProbe checks that the store answers, for /readyz.
type StoreProbe struct {
	Store objstore.Store
	URL   string // store.url, for the log
	// Timeout bounds a listing.
	Timeout time.Duration
	// BucketErr is why the last listing failed, nil when it succeeded;
	// StoreErr the last failed HEAD (the sink's own failed requests store
	// theirs there too), nil when the store answers.
	BucketErr, StoreErr *atomic.Pointer[error]
	Log                 *slog.Logger
}

// Run checks every two seconds that the store answers, until ctx ends: a
// HEAD of a key that need not exist. With the failed requests of the sink
// itself, an outage shows within a few seconds. A HEAD cannot tell a
// missing bucket from a missing key: every listEvery probes (the first
// one too) lists at most one key, which can; a failed listing is an
// ERROR (logged at growing intervals while it lasts) and keeps /readyz not
// ready until a listing succeeds.
func (p StoreProbe) Run(ctx context.Context) {
	const listEvery = 15
	var flog FailureLog
	for n := 0; ; n++ {
		if n%listEvery == 0 || p.BucketErr.Load() != nil {
			lctx, cancel := context.WithTimeout(ctx, p.Timeout)
			err := ListOne(lctx, p.Store)
			cancel()
			if ctx.Err() != nil {
				return
			}
			SetErr(p.BucketErr, err)
			if err != nil {
				flog.Failed(p.Log, "the store refuses a listing (missing bucket or refused credentials?); files cannot be uploaded", err, "store", p.URL)
			} else {
				flog.Recovered(p.Log, "the store lists again", "store", p.URL)
			}
		}
		pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		_, err := p.Store.Head(pctx, archive.ProbeKey)
		cancel()
		if ctx.Err() != nil {
			return
		}
		if err == nil || errors.Is(err, objstore.ErrNotExist) {
			p.StoreErr.Store(nil)
		} else {
			p.StoreErr.Store(&err)
		}
		if !backoff.Sleep(ctx, 2*time.Second) {
			return
		}
	}
}

// ListOne lists at most one key of the store: an error says the bucket
// is missing or refuses the credentials. The probe key's prefix keeps the
// listing empty, hence cheap.
func ListOne(ctx context.Context, st objstore.Store) error {
	for _, err := range st.List(ctx, archive.ProbeKey) {
		return err
	}
	return nil
}
