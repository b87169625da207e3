package health

import (
	"errors"
	"fmt"
	"sort"
	"time"
)

// UploadFailingFor is how long uploads must fail, every one, before
// /readyz says not ready: one failure is retried, a run of them is an
// outage.
const UploadFailingFor = 30 * time.Second

// Stall is a Kafka partition with lag that has not reached a new offset
// for metrics.stall_timeout.
type Stall struct {
	Topic      string
	Partition  int32
	Lag        int64
	AdvancedAt time.Time // when it last reached a new offset
}

// Status is what the sink's readiness is judged on. The errors are the
// last ones stored (nil: none); the functions are asked only when every
// check before theirs passed.
type Status struct {
	Kafka  *error // why the group's last request failed
	Joined bool   // a generation of the group has started
	Topics *error // which configured topics do not exist
	Bucket *error // why the last listing of the store failed
	Store  *error // the store's last failure
	// UploadFailingSince is when uploads started to fail, every one; zero
	// while the last one succeeded. Upload is the last upload's error.
	UploadFailingSince time.Time
	Upload             *error
	// Tables says why the tables' commits are failing or slow, judged
	// over within; nil without a table.
	Tables         func(now time.Time, within time.Duration) error
	CommitInterval time.Duration // table.commit_interval
	// Stalled returns the stalled partitions, longest stalled first.
	Stalled func(now time.Time) []Stall
	// Failed returns the stopped partitions by name, with why.
	Failed func() map[string]error
}

// Err says why the sink is not ready at now, or nil: the first rule that
// fails, in the order of Status's fields.
func (st Status) Err(now time.Time) error {
	if st.Kafka != nil {
		return fmt.Errorf("kafka unreachable: %v", *st.Kafka)
	}
	if !st.Joined {
		return errors.New("not a member of the consumer group yet")
	}
	if st.Topics != nil {
		return *st.Topics
	}
	if st.Bucket != nil {
		return fmt.Errorf("store refuses a listing (store.url): %v", *st.Bucket)
	}
	if st.Store != nil {
		return fmt.Errorf("store unreachable: %v", *st.Store)
	}
	if since := st.UploadFailingSince; !since.IsZero() && now.Sub(since) >= UploadFailingFor {
		msg := "uploads have failed"
		if st.Upload != nil {
			msg = fmt.Sprintf("uploads have failed: %v", *st.Upload)
		}
		return fmt.Errorf("%s, every one for %s", msg, now.Sub(since).Round(time.Second))
	}
	if st.Tables != nil {
		// Two intervals: one failed commit that the next one mends is
		// not an outage.
		if err := st.Tables(now, max(UploadFailingFor, 2*st.CommitInterval)); err != nil {
			return err
		}
	}
	if st.Stalled != nil {
		if stalled := st.Stalled(now); len(stalled) > 0 {
			p := stalled[0]
			return fmt.Errorf("partition %s[%d] has %d records of lag and has not reached a new offset for %s (metrics.stall_timeout); %d partitions stalled",
				p.Topic, p.Partition, p.Lag, now.Sub(p.AdvancedAt).Round(time.Second), len(stalled))
		}
	}
	if st.Failed != nil {
		if failed := st.Failed(); len(failed) > 0 {
			keys := make([]string, 0, len(failed))
			for k := range failed {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			return fmt.Errorf("partition %s stopped: %v", keys[0], failed[keys[0]])
		}
	}
	return nil
}
