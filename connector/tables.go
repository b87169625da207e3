package connector

import (
	"context"
	"fmt"

	"github.com/pqsink/pqsink/connector/tablecommit"
)

// With a table section, a topic's files go to its Iceberg table through
// the table's committer (package tablecommit), which commits them with
// each partition's exactly-once progress and only then the Kafka offsets.
// This is the sink's side: what the committers are handed, and the check
// that the partitions can compute a view's partition values.

// openTables opens the catalog and the tables of the configured topics,
// so that a table that cannot be created or adopted stops the sink at
// startup; with CheckOnly, it only looks at them (nil, with what a check
// found absent in s.checkNotes).
func openTables(ctx context.Context, s *Sink) (*tablecommit.Tables, error) {
	c := s.cfg
	if err := tablecommit.Settings(c); err != nil {
		return nil, err
	}
	// The schema a table is created with when absent: the files' own when
	// fixed; for VARIANT shredded as the records say, the unshredded one
	// (the table has one variant column whatever the shredding); none for
	// Avro, whose table the first writer schema creates.
	create := s.schema
	if create == nil {
		var err error
		if create, err = s.format.TableSchema(); err != nil {
			return nil, err
		}
	}
	if s.checkOnly {
		// A check creates, adopts and evolves nothing: it says whether
		// the sink would be able to. Offline, it does not look at the
		// catalog at all.
		if s.offline {
			return nil, nil
		}
		notes, err := tablecommit.Check(ctx, c, create)
		s.checkNotes = append(s.checkNotes, notes...)
		return nil, err
	}
	t, err := tablecommit.Open(ctx, tablecommit.Options{
		Config: c, Log: s.log, Create: create, PerSchema: s.format.SchemaPerRecord(),
		CheckView: s.checkView, Stats: &s.stats.tables,
	})
	if err != nil {
		return nil, err
	}
	s.maint = newMaintainer(s, t)
	return t, nil
}

// checkView checks that the partitions can compute the values of the
// partition fields of view tc from their records: with the format's one
// schema, from its payload (a Binary format) or its JSON text. With a
// schema per record, each schema is checked when it comes.
func (s *Sink) checkView(tc *tablecommit.Committer) error {
	f := s.format
	if f.Binary() {
		if fixed := f.Fixed(); fixed != nil && len(tc.Computed()) > 0 {
			if _, err := newFixedTablePart(tc, fixed); err != nil {
				return fmt.Errorf("table %s: partition fields: %w", tc.Name(), err)
			}
		}
	} else if !f.SchemaPerRecord() {
		if _, err := newTablePartValues(tc, f.TextOptions()); err != nil {
			return err
		}
	}
	return nil
}
