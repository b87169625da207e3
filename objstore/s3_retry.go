package objstore

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// retryBaseDelay and MaxRetryWait shape the backoff: the wait before
// retry n (from 1) is uniformly random in [0, min(MaxRetryWait,
// retryBaseDelay·2^n)). The first waits are short, for a dropped
// connection; the later ones give a throttled or failing service time to
// recover: the default 10 retries wait about 40 s in all on average.
const retryBaseDelay = 100 * time.Millisecond

// newRetryer returns the SDK's standard retryer (5xx, throttling codes such
// as SlowDown, RequestTimeout, timeouts and connection errors are
// transient), which also retries 429 Too Many Requests whatever its error
// code, with at most o.maxRetries retries, full-jitter backoff capped at
// o.maxRetryWait that honours a Retry-After up to that cap, and never a
// retry of 412 Precondition Failed.
func newRetryer(o options) aws.Retryer {
	maxRetries := o.maxRetries
	backoff := fullJitter{base: retryBaseDelay, max: o.maxRetryWait, onRetryAfter: o.onRetryAfter}
	return retry.NewStandard(func(o *retry.StandardOptions) {
		o.MaxAttempts = min(maxRetries, math.MaxInt-1) + 1
		o.MaxBackoff = backoff.max
		o.Backoff = backoff
		// A 412 is the answer to a conditional write: the object exists.
		// The SDK does not retry it today; this keeps it that way.
		o.Retryables = append([]retry.IsErrorRetryable{
			retry.IsErrorRetryableFunc(func(err error) aws.Ternary {
				var exists *errExistsAfterFailure
				if statusCode(err) == http.StatusPreconditionFailed || errors.As(err, &exists) {
					return aws.FalseTernary
				}
				return aws.UnknownTernary
			}),
		}, o.Retryables...)
		// The SDK retries 429 only with a throttling error code it knows;
		// an S3-compatible service may throttle with another.
		o.Retryables = append(o.Retryables, retry.RetryableHTTPStatusCode{
			Codes: map[int]struct{}{http.StatusTooManyRequests: {}},
		})
		// The SDK's client-side retry quota fails every request at once,
		// without trying, after about 100 retries in a row: one S3
		// brownout would fail the uploads of all partitions together. The
		// per-request limit and the backoff bound the load instead.
		o.RateLimiter = ratelimit.None
	})
}

// fullJitter is exponential backoff with full jitter, raised to what a
// Retry-After in the failed attempt's answer asks, up to max. (The SDK's
// own backoff stops jittering once it reaches its cap, so that clients
// throttled together retry together; it ignores Retry-After.)
type fullJitter struct {
	base, max    time.Duration
	onRetryAfter func(time.Duration) // see options.onRetryAfter
}

func (j fullJitter) BackoffDelay(attempt int, err error) (time.Duration, error) {
	ceiling := j.max
	if attempt < 32 {
		if d := j.base << attempt; d > 0 && d < ceiling {
			ceiling = d
		}
	}
	d := rand.N(ceiling)
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) && re.Response != nil {
		if ra := retryAfter(re.Response.Header, time.Now()); ra > 0 {
			d = retryWait(d, ra, j.max)
			if j.onRetryAfter != nil {
				j.onRetryAfter(d)
			}
		}
	}
	return d, nil
}

// attemptsKey keys the per-operation attemptCount in a request's context.
type attemptsKey struct{}

// attemptCount follows the attempts of one operation call. Attempts run
// one after the other, so it needs no lock.
type attemptCount struct {
	n       int
	lastErr error
}

// retryHook installs hook in a client's middleware stacks: a counter per
// operation call, set up once per call, and a step inside the SDK's retry
// loop that sees every attempt and reports the ones that follow a failure.
func retryHook(hook func(op string, attempt int, err error)) func(*middleware.Stack) error {
	return func(stack *middleware.Stack) error {
		err := stack.Initialize.Add(middleware.InitializeMiddlewareFunc("pqsinkAttemptCount",
			func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				return next.HandleInitialize(context.WithValue(ctx, attemptsKey{}, &attemptCount{}), in)
			}), middleware.Before)
		if err != nil {
			return err
		}
		return stack.Finalize.Insert(middleware.FinalizeMiddlewareFunc("pqsinkRetryHook",
			func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
				c, _ := ctx.Value(attemptsKey{}).(*attemptCount)
				if c == nil {
					return next.HandleFinalize(ctx, in)
				}
				c.n++
				if c.n > 1 {
					hook(awsmiddleware.GetOperationName(ctx), c.n-1, c.lastErr)
				}
				out, md, err := next.HandleFinalize(ctx, in)
				c.lastErr = err
				return out, md, err
			}), "Retry", middleware.After)
	}
}

// errExistsAfterFailure is a conditional PUT that failed without an answer
// (a broken pipe, a reset connection) while the key turned out to exist.
// S3 services may answer 412 before reading the whole body and close the
// connection, and the client, still sending, sees the broken connection
// instead of the 412: retrying would send the body again only to meet the
// same race. It is never retried; Commit reports ErrExists.
type errExistsAfterFailure struct{ err error }

func (e *errExistsAfterFailure) Error() string {
	return "the key exists (the conditional PUT failed without an answer: " + e.err.Error() + ")"
}

func (e *errExistsAfterFailure) Unwrap() error { return e.err }

// headAfterSendFailure adds a step inside the retry loop of one conditional
// PutObject call: when an attempt fails without an HTTP answer, it asks
// with a HEAD whether the key exists, and if so stops the retries.
func headAfterSendFailure(head func(ctx context.Context) error) func(*middleware.Stack) error {
	return func(stack *middleware.Stack) error {
		return stack.Finalize.Insert(middleware.FinalizeMiddlewareFunc("pqsinkHeadAfterSendFailure",
			func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
				out, md, err := next.HandleFinalize(ctx, in)
				if err != nil && statusCode(err) == 0 && ctx.Err() == nil && head(ctx) == nil {
					return out, md, &errExistsAfterFailure{err}
				}
				return out, md, err
			}), "Retry", middleware.After)
	}
}
