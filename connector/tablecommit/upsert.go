package tablecommit

import (
	"fmt"
	"maps"

	"github.com/pqsink/pqsink/archive"
	"github.com/pqsink/pqsink/config"
	"github.com/pqsink/pqsink/table"
)

// An upsert table's commits delete the rows that the records of their
// batches replace or delete (Batch.Deletes), in the same snapshot as the
// files and the progress, and the progress names the partition's key
// index as of its committed offset (table.Progress.Index). The partition
// learns which of its index snapshots a commit made (CommittedIndex), and
// that a commit failed for good for it (Failure).

// deleteOffsets are the offsets of the rows the commit of parts deletes,
// by Kafka partition of topic; nil when none.
func deleteOffsets(topic string, parts map[int32]*pendingProgress) map[table.KafkaPartition][]int64 {
	var out map[table.KafkaPartition][]int64
	for id, pp := range parts {
		if len(pp.deletes) == 0 {
			continue
		}
		if out == nil {
			out = map[table.KafkaPartition][]int64{}
		}
		out[table.KafkaPartition{Topic: topic, Partition: id}] = pp.deletes
	}
	return out
}

// noteIndexes records the key index chains that a commit of parts made.
func (tc *Committer) noteIndexes(parts map[int32]*pendingProgress) {
	tc.upMu.Lock()
	defer tc.upMu.Unlock()
	for id, pp := range parts {
		if pp.progress.Index == nil {
			continue
		}
		if tc.indexes == nil {
			tc.indexes = map[int32][]string{}
		}
		tc.indexes[id] = pp.progress.Index
	}
}

// CommittedIndex returns the key index chain of the last commit this
// member made of Kafka partition id, nil when none: the partition's index
// snapshot that ends it is committed (keyindex.Index.Commit).
func (tc *Committer) CommittedIndex(id int32) []string {
	tc.upMu.Lock()
	defer tc.upMu.Unlock()
	return tc.indexes[id]
}

// failure is why the commits of Kafka partition id failed for good, nil
// when they did not.
func (tc *Committer) failure(id int32) error {
	tc.upMu.Lock()
	defer tc.upMu.Unlock()
	return tc.stopped[id]
}

// Failure returns why the commits of Kafka partition id failed for good:
// the partition must stop. What it hands the committer is dropped until
// it is taken again from the table's state (State).
func (tc *Committer) Failure(id int32) error { return tc.failure(id) }

// clearFailure forgets a failure of partition id, taken again.
func (tc *Committer) clearFailure(id int32) {
	tc.upMu.Lock()
	defer tc.upMu.Unlock()
	delete(tc.stopped, id)
}

// missingRows handles a commit refused because rows its deletes name are
// in no data file (table.NoLiveRowError): the key index of those
// partitions and the table disagree, because another engine removed the
// rows (a copy-on-write DELETE or UPDATE, a rewrite that dropped rows),
// or the index is wrong. With table.missing_rows skip, those offsets are
// counted as deleted already, and the next commit goes without them.
// Otherwise (fail, the default) the partitions stop, their files and
// progress are dropped from the commit (their records stay in Kafka, and
// the files in the store), and the others commit with the next one.
func (tc *Committer) missingRows(e *table.NoLiveRowError, files []table.File, parts map[int32]*pendingProgress) ([]table.File, map[int32]*pendingProgress) {
	log, st := tc.t.log, tc.t.stats
	skip := tc.t.cfg.Table.MissingRows == config.MissingRowsSkip
	stop := map[int32]bool{}
	for kp, offs := range e.Offsets {
		st.MissingRows.Add(int64(len(offs)))
		pp := parts[kp.Partition]
		if kp.Topic != tc.topic || pp == nil {
			continue
		}
		if skip {
			log.Warn("upsert table: rows the key index names are in no data file; counted as deleted already (table.missing_rows: skip)",
				"table", tc.h.Name(), "topic", kp.Topic, "partition", kp.Partition, "offsets", offs)
			gone := map[int64]bool{}
			for _, o := range offs {
				gone[o] = true
			}
			kept := pp.deletes[:0]
			for _, o := range pp.deletes {
				if !gone[o] {
					kept = append(kept, o)
				}
			}
			pp.deletes = kept
			continue
		}
		err := fmt.Errorf("table %s: %s[%d]: the key index names rows that no data file of the table holds (Kafka offsets %v): another engine removed them (a copy-on-write DELETE or UPDATE, or a rewrite that dropped rows), or the index is wrong; "+
			"the partition stops, with nothing committed past the table's state. Once you know why the rows are gone, set table.missing_rows: skip to count them as deleted already, and restart",
			tc.h.Name(), kp.Topic, kp.Partition, offs)
		log.Error("upsert table: commit refused; partition stopped", "table", tc.h.Name(), "topic", kp.Topic, "partition", kp.Partition, "offsets", offs, "error", err)
		tc.upMu.Lock()
		if tc.stopped == nil {
			tc.stopped = map[int32]error{}
		}
		tc.stopped[kp.Partition] = err
		tc.upMu.Unlock()
		stop[kp.Partition] = true
	}
	if len(stop) == 0 {
		return files, parts
	}
	kept := files[:0]
	for _, f := range files {
		if f.Footer != nil {
			if r, err := archive.ReadRange(f.Footer.KeyValueMetadata); err == nil && stop[r.Partition] {
				tc.pending(f, -1)
				continue
			}
		}
		kept = append(kept, f)
	}
	maps.DeleteFunc(parts, func(id int32, _ *pendingProgress) bool { return stop[id] })
	return kept, parts
}

// IndexKey is the store key of the key index snapshot of Kafka partition
// id with sequence number seq and checksum sum: under the table's
// location, named by its content, so that writing it again (create if
// absent) changes nothing.
func (tc *Committer) IndexKey(id int32, seq uint64, sum uint32) string {
	return fmt.Sprintf("%s/index/%s/%d/%d-%08x.pqkidx", tc.root, tc.topic, id, seq, sum)
}
