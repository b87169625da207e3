package objstore

import (
	"net/http"
	"strconv"
	"time"
)

// retryAfter returns how long the answer's headers ask a client to wait
// before it tries again, or 0 when they ask nothing: Retry-After, in
// seconds or as an HTTP date (the answer of a throttled or unavailable
// service, 429 or 503), or Azure's retry-after-ms and x-ms-retry-after-ms,
// in milliseconds, which take precedence as they do in Azure's SDK.
func retryAfter(h http.Header, now time.Time) time.Duration {
	if h == nil {
		return 0
	}
	for _, name := range []string{"retry-after-ms", "x-ms-retry-after-ms"} {
		if ms, err := strconv.ParseInt(h.Get(name), 10, 64); err == nil && ms > 0 {
			return time.Duration(min(ms, int64(MaxMaxRetryWait/time.Millisecond))) * time.Millisecond
		}
	}
	v := h.Get("Retry-After")
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseInt(v, 10, 64); err == nil {
		if s <= 0 {
			return 0
		}
		return time.Duration(min(s, int64(MaxMaxRetryWait/time.Second))) * time.Second
	}
	t, err := http.ParseTime(v)
	if err != nil {
		// A date in another zone than GMT, which Azure's SDK takes too.
		t, err = time.Parse(time.RFC1123, v)
	}
	if err == nil && t.After(now) {
		return min(t.Sub(now), MaxMaxRetryWait)
	}
	return 0
}

// retryWait is the wait before a retry: the backoff's, raised to what the
// service asked for (ra, 0 for nothing), and never more than limit.
func retryWait(backoff, ra, limit time.Duration) time.Duration {
	return min(max(backoff, ra), limit)
}
