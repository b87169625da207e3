package table

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	itable "github.com/apache/iceberg-go/table"

	"github.com/pqsink/pqsink/archive"
	"github.com/pqsink/pqsink/reader"
)

// FileName is the template of the name of a data file that pqsink writes
// into one of a table's partition folders: its records' topic and Kafka
// partition and the offset of its first record, so that the file's key
// is fixed by its first record.
const FileName = "{topic}+{partition}+{first_offset}.parquet"

// maxRecoverFooter bounds what reading one data file's footer may take
// while a lost state is rebuilt: a footer is a few KB to a few MB.
const maxRecoverFooter = 64 << 20

// recoverState rebuilds the exactly-once state of a table none of whose
// snapshots carries one (another engine's snapshots, after those that
// did expired) from its live data files, so that a sink starting on it
// (a new group, or Kafka offsets reset) adds none of the records the
// table holds. Each file's Kafka records are read from its manifest
// entry's bounds of _kafka.topic, .partition and .offset when those name
// one Kafka partition, and from the ranges of its footer otherwise. A
// range becomes a path of its Kafka partition's progress: the chain of
// its partition folder, up to its last offset; the progress's committed
// offset is the least first offset of the partition's ranges, where the
// table's history of that partition begins. Files with no Kafka envelope
// hold no record of a topic and are passed over; a file whose records
// cannot be placed (several partitions, no pqsink footer) fails the read
// rather than let its records be added twice. The state has group "":
// State.As shows it to every group.
func (h *Handle) recoverState(ctx context.Context, tbl *itable.Table) (State, error) {
	snap := tbl.CurrentSnapshot()
	if snap == nil {
		return State{}, nil
	}
	files, _, err := snapshotFiles(ctx, tbl, snap)
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return State{}, nil
	}
	ts, off, part, topic := envelopeFields(tbl.Metadata(), snap)
	if off.id == 0 || part.id == 0 {
		// No envelope: the table holds no record pqsink could know.
		return State{}, nil
	}
	data := strings.TrimSuffix(tbl.Location(), "/") + "/data/"
	root, ok := strings.CutPrefix(data, h.warehouse+"/")
	if !ok {
		return nil, fmt.Errorf("rebuilding the lost exactly-once state: the table's location %s is not under the store's URL %s", tbl.Location(), h.warehouse)
	}
	var fsys icebergio.IO
	out := State{}
	for _, f := range files {
		env := envelopeOf(f.df, ts, off, part, topic)
		if !env.Offset.HasMin && !env.Partition.HasMin {
			continue // not a Kafka record's file
		}
		ranges, err := fileRanges(env)
		if err != nil {
			if fsys == nil {
				if fsys, err = tbl.FS(ctx); err != nil {
					return nil, err
				}
			}
			if ranges, err = footerRanges(fsys, f.df); err != nil {
				return nil, fmt.Errorf("rebuilding the lost exactly-once state: data file %s: %w", f.Location, err)
			}
		}
		// path.Dir would fold file:/// into file:/.
		folder, ok := strings.CutPrefix(f.Location[:strings.LastIndexByte(f.Location, '/')+1], data)
		if !ok {
			return nil, fmt.Errorf("rebuilding the lost exactly-once state: data file %s is outside the table's data folder %s, and its records' chain cannot be named", f.Location, data)
		}
		for _, r := range ranges {
			id, err := chainIdentity(root+folder, r.Topic, r.Partition)
			if err != nil {
				return nil, fmt.Errorf("rebuilding the lost exactly-once state: data file %s: %w", f.Location, err)
			}
			k := Partition{Topic: r.Topic, Partition: r.Partition}
			p, seen := out[k]
			if !seen {
				p = Progress{Committed: r.First, Paths: map[string]int64{}}
			}
			p.Committed = min(p.Committed, r.First)
			if cur, ok := p.Paths[id]; !ok || r.Last > cur {
				p.Paths[id] = r.Last
			}
			out[k] = p
		}
	}
	return out, nil
}

// fileRanges is the Kafka range of a data file whose envelope bounds name
// one topic and one Kafka partition.
func fileRanges(env Envelope) ([]archive.Range, error) {
	switch {
	case !env.Partition.HasMin || !env.Partition.HasMax || env.Partition.Min != env.Partition.Max:
		return nil, errors.New("its records' Kafka partitions are not one")
	case !env.Topic.HasMin || !env.Topic.HasMax || env.Topic.Min != env.Topic.Max:
		return nil, errors.New("its records' topics are not one, or not known")
	case !env.Offset.HasMin || !env.Offset.HasMax:
		return nil, errors.New("its records' offsets are not known")
	}
	return []archive.Range{{Topic: env.Topic.Min, Partition: int32(env.Partition.Min), First: env.Offset.Min, Last: env.Offset.Max}}, nil
}

// footerRanges reads the Kafka ranges of a data file from its footer.
func footerRanges(fsys icebergio.IO, df iceberg.DataFile) ([]archive.Range, error) {
	file, err := fsys.Open(df.FilePath())
	if err != nil {
		return nil, err
	}
	defer file.Close()
	st, err := file.Stat()
	if err != nil {
		return nil, err
	}
	f, err := reader.Open(file, st.Size(), reader.MaxMemory(maxRecoverFooter))
	if err != nil {
		return nil, err
	}
	rs, err := archive.ReadRanges(f.Metadata().KeyValueMetadata)
	if err != nil {
		return nil, fmt.Errorf("its records cannot be placed in Kafka (their partitions are not one, and its footer says nothing of them): %w", err)
	}
	return rs, nil
}

// chainIdentity is the path identity of the chain of the files of topic's
// Kafka partition in folder (a key prefix ending in "/"), as a sink
// writing there names it.
func chainIdentity(folder, topic string, partition int32) (string, error) {
	t, err := archive.Parse(folder+FileName, true)
	if err != nil {
		return "", fmt.Errorf("folder %s: %w", folder, err)
	}
	return string(t.AppendIdentity(nil, topic, partition, time.Time{}, nil)), nil
}
