package table

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	itable "github.com/apache/iceberg-go/table"

	"github.com/pqsink/pqsink/schema"
)

// maxFitted bounds the schemas a Handle remembers: a topic has a few
// schemas over its life, but a registry that hands out a new one per record
// must not grow the cache without end.
const maxFitted = 256

// Fit returns s with the table's field ids: the schema a file of records
// shaped by s must be written with. When the table does not hold s's
// fields as they are, its schema evolves first where Iceberg allows it
// without rewriting data: a field s adds becomes an optional column with a
// new id, a type s widens is promoted (int to long, float to double, a
// decimal to more digits of the same scale), and a column the table
// requires becomes optional when s has it optional. The update is a commit
// of its own, made before any file needs it; it adds no snapshot, so the
// exactly-once state of the current one stands. Anything else (another
// type, a required column s lacks) is refused with an error that wraps
// ErrIncompatible and names the first such field. A table that does not
// exist yet is created from s.
//
// evolved reports whether this call changed the table's schema.
func (h *Handle) Fit(ctx context.Context, s *schema.Schema) (fitted *schema.Schema, evolved bool, err error) {
	key := s.String()
	h.fitMu.Lock()
	defer h.fitMu.Unlock()
	if ws := h.fitted[key]; ws != nil {
		return ws, false, nil
	}
	ws, evolved, err := h.fit(ctx, s)
	if err != nil {
		return nil, false, fmt.Errorf("table %s: %w", h.name, err)
	}
	if len(h.fitted) >= maxFitted {
		clear(h.fitted)
	}
	h.fitted[key] = ws
	return ws, evolved, nil
}

func (h *Handle) fit(ctx context.Context, s *schema.Schema) (*schema.Schema, bool, error) {
	backoff := commitBackoff
	for attempt := 1; ; attempt++ {
		tbl, err := h.cat.LoadTable(ctx, h.ident)
		if errors.Is(err, catalog.ErrNoSuchTable) {
			tbl, err = h.k.create(ctx, h.ident, s)
			if errors.Is(err, catalog.ErrTableAlreadyExists) {
				tbl, err = h.cat.LoadTable(ctx, h.ident)
			}
			if err == nil {
				err = h.adopt(tbl)
			}
		}
		if err != nil {
			return nil, false, err
		}
		version := tbl.Metadata().Version()
		ws, mismatch := withFieldIDs(s, tbl.Schema(), version)
		if mismatch == nil {
			return ws, false, nil
		}
		if !errors.Is(mismatch, ErrIncompatible) {
			return nil, false, mismatch
		}
		next, err := h.evolve(ctx, tbl, s)
		switch {
		case errors.Is(err, errNotEvolvable):
			return nil, false, mismatch
		case err == nil:
			ws, err := withFieldIDs(s, next.Schema(), version)
			if err != nil {
				// The union did not make room for s: what is left is
				// not an evolution Iceberg allows.
				return nil, false, err
			}
			return ws, true, nil
		case !conflict(err) || attempt >= commitAttempts:
			return nil, false, fmt.Errorf("updating the schema for field changes (%w) (attempt %d): %w", mismatch, attempt, err)
		}
		select {
		case <-ctx.Done():
			return nil, false, ctx.Err()
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

// errNotEvolvable is evolve's answer for a schema that no allowed update
// of the table's can accept.
var errNotEvolvable = errors.New("not an allowed schema evolution")

// evolve commits the union by name of tbl's schema and s's (the columns s
// adds, the types it widens) when the result accepts s: an update that
// would not be enough is not made at all.
func (h *Handle) evolve(ctx context.Context, tbl *itable.Table, s *schema.Schema) (*itable.Table, error) {
	tx := tbl.NewTransaction()
	is, err := unionHolds(tx, tbl.Metadata().Version(), s)
	if err != nil {
		return nil, err
	}
	if err := tx.UpdateSchema(true, false).UnionByNameWith(is).Commit(); err != nil {
		return nil, err
	}
	return tx.Commit(ctx)
}

// unionHolds tries, on tx's table (of format version), the union by name of
// its schema and s's,
// and returns s as an Iceberg schema when the union accepts s, or
// errNotEvolvable. Nothing is staged on tx: an UpdateSchema runs its
// operations on each Apply, so the caller commits with one of its own.
func unionHolds(tx *itable.Transaction, version int, s *schema.Schema) (*iceberg.Schema, error) {
	is, err := icebergSchema(s, version)
	if err != nil {
		return nil, errNotEvolvable
	}
	trial, err := tx.UpdateSchema(true, false).UnionByNameWith(is).Apply()
	if err != nil {
		return nil, errNotEvolvable
	}
	if _, err := withFieldIDs(s, trial, version); err != nil {
		return nil, errNotEvolvable
	}
	return is, nil
}

// Check says, without changing anything, whether the sink could write s
// to the table called name: a table that does not exist must be creatable
// from s with the configured spec (s may be nil when the records will say),
// and one that exists must have partitionBy as its spec (any spec when
// partitionBy is nil: the sink follows the table's) and hold s as it is or
// after a schema update that Fit would make. The error names what does not
// fit. spec is the existing table's partition spec, as PartitionBy writes
// it; nil when the table does not exist.
func (k *Catalog) Check(ctx context.Context, name string, s *schema.Schema, partitionBy []string) (spec []string, err error) {
	ident := append(k.namespace(), name)
	what := strings.Join(ident, ".")
	var tbl *itable.Table
	err = catalog.ErrNoSuchTable // a catalog that does not exist yet holds no table
	if k.cat != nil {
		tbl, err = k.cat.LoadTable(ctx, ident)
	}
	switch {
	case errors.Is(err, catalog.ErrNoSuchTable):
		if s == nil {
			return nil, nil
		}
		is, err := icebergSchema(s, k.cfg.FormatVersion)
		if err != nil {
			return nil, fmt.Errorf("table %s: %w: %w", what, ErrIncompatible, err)
		}
		if _, err := partitionSpec(is, k.cfg.PartitionBy); err != nil {
			return nil, fmt.Errorf("table %s: %w", what, err)
		}
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("table %s: %w", what, err)
	}
	h := k.handle(ident)
	if err := h.adopt(tbl); err != nil {
		return nil, fmt.Errorf("table %s: %w", what, err)
	}
	spec = h.partitionBy
	if partitionBy != nil && !slices.Equal(spec, partitionBy) {
		return spec, fmt.Errorf("table %s is partitioned by %q, and table.partition_by says %q: set partition_by to the table's spec, or leave it out to follow the table's", what, spec, partitionBy)
	}
	if s == nil {
		return spec, nil
	}
	_, mismatch := withFieldIDs(s, tbl.Schema(), tbl.Metadata().Version())
	if mismatch == nil {
		return spec, nil
	}
	if _, err := unionHolds(tbl.NewTransaction(), tbl.Metadata().Version(), s); err != nil {
		return spec, fmt.Errorf("table %s: %w", what, mismatch)
	}
	return spec, nil
}
