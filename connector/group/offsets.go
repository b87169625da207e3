package group

import (
	"context"
	"errors"
	"fmt"

	"github.com/segmentio/kafka-go"
)

// ErrGenerationOver is a commit refused because the group moved on to a
// new generation: the partition is no longer this member's to commit.
var ErrGenerationOver = errors.New("consumer group generation is over")

// StartPositions reads where each of the partitions assigned in gen
// (partition ids by topic) resumes: the committed offset and metadata,
// or, for a partition the group never committed, the first offset
// (latest: the last) resolved and committed at once, so that the start
// means the same offset after a restart. It also returns how many were
// resolved so.
func StartPositions(ctx context.Context, client *kafka.Client, gen *Generation, assigned map[string][]int, latest bool) (map[string]map[int]Committed, int, error) {
	got, err := FetchCommitted(ctx, client, gen.Group, assigned)
	if err != nil {
		return nil, 0, err
	}
	missing := map[string][]int{}
	for topic, ids := range assigned {
		if got[topic] == nil {
			got[topic] = map[int]Committed{}
		}
		for _, id := range ids {
			if c, ok := got[topic][id]; !ok || c.Offset < 0 {
				missing[topic] = append(missing[topic], id)
			}
		}
	}
	if len(missing) == 0 {
		return got, 0, nil
	}
	starts, err := startOffsets(ctx, client, missing, latest)
	if err != nil {
		return nil, 0, err
	}
	if err := commitOffsets(ctx, client, gen, starts); err != nil {
		return nil, 0, err
	}
	n := 0
	for topic, offs := range starts {
		for id, off := range offs {
			got[topic][id] = Committed{Offset: off}
			n++
		}
	}
	return got, n, nil
}

// commit sends one offset commit in generation gen and returns the first
// error of the request or of a partition.
func commit(ctx context.Context, client *kafka.Client, gen *Generation, topics map[string][]kafka.OffsetCommit) error {
	errs, err := commitMany(ctx, client, gen, topics)
	if err != nil {
		return err
	}
	for topic, ps := range errs {
		for p, err := range ps {
			return fmt.Errorf("%s[%d]: %w", topic, p, err)
		}
	}
	return nil
}

// commitMany sends one offset commit in generation gen, as a member of it
// (a fenced-off member's commit is refused), and returns the error of the
// request or, per topic and partition, those of the partitions that
// failed. A refusal because the group moved on wraps ErrGenerationOver.
func commitMany(ctx context.Context, client *kafka.Client, gen *Generation, topics map[string][]kafka.OffsetCommit) (map[string]map[int]error, error) {
	resp, err := client.OffsetCommit(ctx, &kafka.OffsetCommitRequest{
		GroupID: gen.Group, GenerationID: gen.ID, MemberID: gen.MemberID, InstanceID: gen.InstanceID, Topics: topics,
	})
	if err != nil {
		return nil, generationOver(err)
	}
	var errs map[string]map[int]error
	for topic, ps := range resp.Topics {
		for _, p := range ps {
			if p.Error == nil {
				continue
			}
			if errs == nil {
				errs = map[string]map[int]error{}
			}
			if errs[topic] == nil {
				errs[topic] = map[int]error{}
			}
			errs[topic][p.Partition] = generationOver(p.Error)
		}
	}
	return errs, nil
}

// generationOver marks the errors that say the group moved on.
func generationOver(err error) error {
	if errors.Is(err, kafka.IllegalGeneration) || errors.Is(err, kafka.RebalanceInProgress) ||
		errors.Is(err, kafka.UnknownMemberId) || errors.Is(err, kafka.FencedInstanceID) {
		return fmt.Errorf("%w: %w", ErrGenerationOver, err)
	}
	return err
}

// Committed is a partition's committed offset and metadata; Offset is -1
// when the group never committed it.
type Committed struct {
	Offset   int64
	Metadata string
}

// FetchCommitted reads the group's committed offsets and metadata of
// parts (partition ids by topic).
func FetchCommitted(ctx context.Context, client *kafka.Client, group string, parts map[string][]int) (map[string]map[int]Committed, error) {
	resp, err := client.OffsetFetch(ctx, &kafka.OffsetFetchRequest{GroupID: group, Topics: parts})
	if err != nil {
		return nil, fmt.Errorf("fetching committed offsets of group %s: %w", group, err)
	}
	if resp.Error != nil {
		return nil, fmt.Errorf("fetching committed offsets of group %s: %w", group, resp.Error)
	}
	out := map[string]map[int]Committed{}
	for topic, ps := range resp.Topics {
		m := map[int]Committed{}
		for _, p := range ps {
			if p.Error != nil {
				return nil, fmt.Errorf("fetching committed offset of %s[%d]: %w", topic, p.Partition, p.Error)
			}
			m[p.Partition] = Committed{Offset: p.CommittedOffset, Metadata: p.Metadata}
		}
		out[topic] = m
	}
	return out, nil
}

// startOffsets resolves the first or last offset of partitions the group
// never committed.
func startOffsets(ctx context.Context, client *kafka.Client, parts map[string][]int, latest bool) (map[string]map[int]int64, error) {
	req := &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{}}
	for topic, ids := range parts {
		for _, id := range ids {
			r := kafka.FirstOffsetOf(id)
			if latest {
				r = kafka.LastOffsetOf(id)
			}
			req.Topics[topic] = append(req.Topics[topic], r)
		}
	}
	resp, err := client.ListOffsets(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("listing offsets: %w", err)
	}
	out := map[string]map[int]int64{}
	for topic, ids := range parts {
		got := map[int]kafka.PartitionOffsets{}
		for _, p := range resp.Topics[topic] {
			got[p.Partition] = p
		}
		out[topic] = map[int]int64{}
		for _, id := range ids {
			p, ok := got[id]
			switch {
			case !ok:
				return nil, fmt.Errorf("listing offsets of %s[%d]: no answer for the partition", topic, id)
			case p.Error != nil:
				return nil, fmt.Errorf("listing offsets of %s[%d]: %w", topic, id, p.Error)
			case latest:
				out[topic][id] = p.LastOffset
			default:
				out[topic][id] = p.FirstOffset
			}
		}
	}
	return out, nil
}

// commitOffsets commits offsets without metadata for many partitions in
// one request.
func commitOffsets(ctx context.Context, client *kafka.Client, gen *Generation, offsets map[string]map[int]int64) error {
	topics := map[string][]kafka.OffsetCommit{}
	for topic, offs := range offsets {
		for id, off := range offs {
			topics[topic] = append(topics[topic], kafka.OffsetCommit{Partition: id, Offset: off})
		}
	}
	if err := commit(ctx, client, gen, topics); err != nil {
		return fmt.Errorf("committing start offsets: %w", err)
	}
	return nil
}
