package source

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/segmentio/kafka-go/protocol"
	"github.com/segmentio/kafka-go/protocol/metadata"
)

// countingTripper answers every request with the same response and counts
// them.
type countingTripper struct {
	calls int
	resp  protocol.Message
}

func (c *countingTripper) RoundTrip(context.Context, net.Addr, protocol.Message) (protocol.Message, error) {
	c.calls++
	return c.resp, nil
}

// TestTopicMetadataCache checks that the target topic's metadata is asked
// once while fresh, again once stale (at the next look at the clock), and
// that other requests always pass.
func TestTopicMetadataCache(t *testing.T) {
	inner := &countingTripper{resp: &metadata.Response{}}
	c := &topicMetadataCache{RoundTripper: inner, topic: "t"}
	ask := func(topics ...string) {
		t.Helper()
		resp, err := c.RoundTrip(context.Background(), nil, &metadata.Request{TopicNames: topics})
		if err != nil || resp != inner.resp {
			t.Fatalf("got %v, %v", resp, err)
		}
	}
	for range 10 * clockEvery {
		ask("t")
	}
	if inner.calls != 1 {
		t.Fatalf("%d metadata requests for a fresh answer, want 1", inner.calls)
	}
	ask("other")
	ask("t", "other")
	if inner.calls != 3 {
		t.Fatalf("%d requests, want 3: other topics pass", inner.calls)
	}
	c.cached.Store(&cachedMetadata{resp: inner.resp, at: time.Now().Add(-2 * metadataTTL)})
	for range clockEvery {
		ask("t")
	}
	if inner.calls != 4 {
		t.Fatalf("%d requests, want 4: a stale answer is asked again within %d requests", inner.calls, clockEvery)
	}
	for range 5 * clockEvery {
		ask("t")
	}
	if inner.calls != 4 {
		t.Fatalf("%d requests, want 4: the new answer is fresh", inner.calls)
	}
}
