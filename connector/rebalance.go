package connector

import (
	"context"
	"fmt"
	"time"

	"github.com/pqsink/pqsink/connector/group"
)

// pipeline is the sink's side of the group's holdings (group.Pipeline):
// it starts the partitions a generation assigns, reads where they
// resume, commits what the partitions handed over finished to their
// tables, and counts the rebalances.
type pipeline struct {
	s       *Sink
	ctx     context.Context // the sink's: its end is a shutdown
	mctx    context.Context // the membership's: commits run in it
	commits *group.CommitBatcher
}

// Positions reads where each assigned partition resumes: the committed
// offset and metadata, or, for a partition the group never committed,
// the start position resolved to an offset and committed at once, so that
// "latest" means the same offset after a restart.
func (p *pipeline) Positions(ctx context.Context, gen *group.Generation, assigned map[string][]int) (map[string]map[int]group.Committed, error) {
	s := p.s
	got, n, err := group.StartPositions(ctx, s.kafka.client, gen, assigned, s.cfg.Kafka.Start == "latest")
	if err != nil {
		return nil, err
	}
	if n > 0 {
		s.log.Info("partitions with no committed offset start at "+s.cfg.Kafka.Start, "partitions", n)
	}
	return got, nil
}

// Start takes a partition and prepares its run (runPartition).
func (p *pipeline) Start(ctx context.Context, topic string, id int32, c group.Committed, ended func()) group.Partition {
	r := p.s.runPartition(p.ctx, ctx, p.mctx, p.commits, topic, id, committed{offset: c.Offset, metadata: c.Metadata}, ended)
	if r == nil {
		return nil
	}
	return r
}

// Generation counts a generation, marks the sink as joined, and aborts
// the uploads a crashed or fenced-off owner left behind (once old enough)
// on every assignment, not only at startup.
func (p *pipeline) Generation(ctx context.Context, _ *group.Generation) {
	p.s.stats.rebalances.Add(1)
	p.s.joined.Store(true)
	go p.s.abortStale(ctx)
}

// Moved counts the partitions a generation kept, moved, dropped or
// assigned.
func (p *pipeline) Moved(kind string, n int) { p.s.stats.rebalancePartitions(kind, n) }

// Settled observes how long the rebalance took.
func (p *pipeline) Settled(gen *group.Generation) {
	p.s.stats.rebalanceSeconds.Observe(time.Since(gen.Start).Seconds())
}

// Finish commits the files of the partitions handed over to their
// tables, within the shutdown timeout.
func (p *pipeline) Finish(ctx context.Context) {
	if p.s.tables != nil {
		fctx, cancel := context.WithTimeout(ctx, p.s.cfg.ShutdownTimeout)
		p.s.tables.CommitAll(fctx)
		cancel()
	}
}

// topicPartition names one partition.
type topicPartition struct {
	topic string
	id    int32
}

func (k topicPartition) String() string { return fmt.Sprintf("%s[%d]", k.topic, k.id) }
