package health

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// TestStatusErr: readiness is the first rule that fails, in order; the
// rules behind functions are asked only when the ones before pass.
func TestStatusErr(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	e := func(s string) *error { err := errors.New(s); return &err }
	asked := func(t *testing.T) func() map[string]error {
		return func() map[string]error { t.Error("Failed asked after an earlier rule failed"); return nil }
	}
	ready := func() Status { return Status{Joined: true} }
	cases := []struct {
		name string
		st   func(t *testing.T) Status
		want string // "" ready
	}{
		{"ready", func(*testing.T) Status { return ready() }, ""},
		{"kafka first", func(t *testing.T) Status {
			return Status{Kafka: e("refused"), Topics: e("topics"), Failed: asked(t)}
		}, "kafka unreachable: refused"},
		{"not joined", func(t *testing.T) Status { return Status{Failed: asked(t)} }, "not a member of the consumer group yet"},
		{"topics", func(t *testing.T) Status {
			st := ready()
			st.Topics, st.Bucket, st.Failed = e(`kafka.topics: topics ["x"] do not exist on the brokers`), e("no bucket"), asked(t)
			return st
		}, `topics ["x"] do not exist`},
		{"bucket before store", func(t *testing.T) Status {
			st := ready()
			st.Bucket, st.Store = e("NoSuchBucket"), e("timeout")
			return st
		}, "store refuses a listing (store.url): NoSuchBucket"},
		{"uploads failing a short while", func(*testing.T) Status {
			st := ready()
			st.UploadFailingSince, st.Upload = now.Add(-10*time.Second), e("507")
			return st
		}, ""},
		{"uploads failing", func(t *testing.T) Status {
			st := ready()
			st.UploadFailingSince, st.Upload, st.Failed = now.Add(-45*time.Second), e("507"), asked(t)
			return st
		}, "uploads have failed: 507, every one for 45s"},
		{"tables over two intervals", func(t *testing.T) Status {
			st := ready()
			st.CommitInterval = time.Minute
			st.Tables = func(_ time.Time, within time.Duration) error {
				if within != 2*time.Minute {
					t.Errorf("tables judged over %s, want 2m", within)
				}
				return errors.New("commits failing")
			}
			return st
		}, "commits failing"},
		{"stalled", func(*testing.T) Status {
			st := ready()
			st.Stalled = func(time.Time) []Stall {
				return []Stall{{Topic: "t", Partition: 3, Lag: 12, AdvancedAt: now.Add(-5 * time.Minute)}, {Topic: "t", Partition: 1}}
			}
			return st
		}, "partition t[3] has 12 records of lag and has not reached a new offset for 5m0s (metrics.stall_timeout); 2 partitions stalled"},
		{"stopped, by name", func(*testing.T) Status {
			st := ready()
			st.Failed = func() map[string]error { return map[string]error{"t[2]": errors.New("b"), "t[1]": errors.New("a")} }
			return st
		}, "partition t[1] stopped: a"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.st(t).Err(now)
			switch {
			case c.want == "" && err != nil:
				t.Errorf("not ready: %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Errorf("got %v, want %q", err, c.want)
			}
		})
	}
}
