package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	itable "github.com/apache/iceberg-go/table"

	"github.com/pqsink/pqsink/archive"
	"github.com/pqsink/pqsink/config"
	"github.com/pqsink/pqsink/objstore/fromconfig"
	"github.com/pqsink/pqsink/table"
)

// inspectTable prints what `inspect meta iceberg:NAMESPACE.TABLE` shows of
// a table: its current snapshot, schema and partition spec from the
// metadata file the catalog points at, its data files, and the exactly-once
// state in the snapshot summaries. It only reads: the catalog, the
// metadata file and the manifests.
func inspectTable(ctx context.Context, w io.Writer, ref, configFile string) error {
	if configFile == "" {
		return usagef("%s: --config FILE is required: its table and store sections say where the catalog and the files are", ref)
	}
	cfg, err := config.Load(configFile, os.LookupEnv)
	if err != nil {
		return err
	}
	if cfg.Table == nil {
		return fmt.Errorf("%s has no table section: it says which catalog holds %s", configFile, ref)
	}
	tref, err := parseTableRef(ref, cfg.Table.Namespace)
	if err != nil {
		return usagef("%q: want %sNAMESPACE.TABLE", ref, tableScheme)
	}
	if tref.snapshot != 0 {
		return usagef("%q: inspect meta shows a table's current snapshot; leave out @%d", ref, tref.snapshot)
	}
	if err := sqliteCatalogExists(cfg.Table.Catalog); err != nil {
		return err
	}
	cat, err := table.Open(ctx, cfg)
	if err != nil {
		return err
	}
	defer cat.Close()
	snap, err := cat.Snapshot(ctx, tref.ident, 0)
	noSnapshot := errors.Is(err, table.ErrNoSuchSnapshot)
	if err != nil && !noSnapshot {
		return err
	}
	h, err := cat.Existing(ctx, tref.ident)
	if err != nil {
		return err
	}
	state, err := h.State(ctx)
	if err != nil {
		return err
	}
	if noSnapshot {
		fmt.Fprintf(w, "table %s: no snapshot yet (nothing was committed to it)\n", h.Name())
		return nil
	}
	md, err := readTableMetadata(ctx, cfg, snap.MetadataLocation)
	if err != nil {
		return fmt.Errorf("table %s: %w", snap.Table, err)
	}
	printTableMeta(w, snap, md, state)
	return nil
}

// sqliteCatalogExists refuses a SQLite catalog whose file does not exist:
// opening it would create it, and inspect changes nothing.
func sqliteCatalogExists(c config.Catalog) error {
	path, ok := strings.CutPrefix(c.URI.Value(), "sqlite://")
	if c.Type != "sql" || !ok {
		return nil
	}
	if _, err := os.Stat(path); err != nil {
		return fmt.Errorf("the SQLite catalog %s (table.catalog.uri): %w", path, err)
	}
	return nil
}

// readTableMetadata reads and parses the table metadata file at loc, an
// object of the config's store.
func readTableMetadata(ctx context.Context, cfg *config.Config, loc string) (itable.Metadata, error) {
	prefix := strings.TrimSuffix(cfg.Store.URL, "/") + "/"
	key, ok := strings.CutPrefix(loc, prefix)
	if !ok {
		return nil, fmt.Errorf("its metadata file %s is not under store.url %s, whose credentials are the ones inspect has", loc, cfg.Store.URL)
	}
	store, err := fromconfig.Open(ctx, cfg.Store.URL, &cfg.Store)
	if err != nil {
		return nil, err
	}
	defer store.Close()
	r, _, err := store.Get(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("reading its metadata file %s: %w", loc, err)
	}
	defer r.Close()
	md, err := itable.ParseMetadata(r)
	if err != nil {
		return nil, fmt.Errorf("parsing its metadata file %s: %w", loc, err)
	}
	return md, nil
}

// printTableMeta prints the table's current snapshot as snap (its files)
// and md (its metadata file) say, and the exactly-once state.
func printTableMeta(w io.Writer, snap *table.Snapshot, md itable.Metadata, state table.State) {
	fmt.Fprintf(w, "table      %s (Iceberg, format version %d)\n", snap.Table, md.Version())
	fmt.Fprintf(w, "location   %s\n", snap.Location)
	fmt.Fprintf(w, "metadata   %s\n", snap.MetadataLocation)
	cur := md.SnapshotByID(snap.ID)
	if cur == nil {
		// The catalog moved on between the two reads.
		cur = md.CurrentSnapshot()
	}
	if cur != nil {
		op := ""
		if cur.Summary != nil {
			op = ", " + string(cur.Summary.Operation)
		}
		fmt.Fprintf(w, "snapshot   %d (current%s), committed %s, sequence number %d, %d snapshots in the metadata\n",
			cur.SnapshotID, op, time.UnixMilli(cur.TimestampMs).UTC().Format(time.RFC3339Nano), cur.SequenceNumber, len(md.Snapshots()))
		if cur.Summary != nil {
			keys := slices.Sorted(func(yield func(string) bool) {
				for k := range cur.Summary.Properties {
					if !yield(k) {
						return
					}
				}
			})
			for _, k := range keys {
				v := cur.Summary.Properties[k]
				if k == table.SummaryState {
					v = describeStateValue(v)
				}
				fmt.Fprintf(w, "  %s: %s\n", k, v)
			}
		}
	}
	var bytes, records, deleted int64
	for _, f := range snap.Files {
		bytes += f.Size
		records += f.Records
		if f.Deleted != nil {
			deleted += f.Deleted.Len()
		}
	}
	fmt.Fprintf(w, "data files %d, %d bytes, %d records", len(snap.Files), bytes, records)
	if deleted > 0 {
		fmt.Fprintf(w, " (%d of them deleted by delete files)", deleted)
	}
	fmt.Fprintln(w)
	if s := md.CurrentSchema(); s != nil {
		fmt.Fprintf(w, "schema     id %d\n", s.ID)
		for _, f := range s.Fields() {
			fmt.Fprintf(w, "  %s\n", f.String())
		}
	}
	spec := md.PartitionSpec()
	fmt.Fprintf(w, "partition spec id %d", spec.ID())
	if spec.NumFields() == 0 {
		fmt.Fprintf(w, ": unpartitioned\n")
	} else {
		fmt.Fprintln(w)
		for _, f := range spec.Fields() {
			source := fmt.Sprint(f.SourceID())
			if s := md.CurrentSchema(); s != nil {
				if name, ok := s.FindColumnName(f.SourceID()); ok {
					source = name
				}
			}
			fmt.Fprintf(w, "  %s: %s(%s)\n", f.Name, f.Transform, source)
		}
	}
	printTableState(w, md, state)
}

// describeStateValue shortens a pqsink.state summary value: an inline
// document is shown by its length (printTableState decodes it), a state
// object by its location.
func describeStateValue(v string) string {
	switch {
	case strings.HasPrefix(v, archive.CommitInline):
		return fmt.Sprintf("inline document, %d bytes (below)", len(v)-len(archive.CommitInline))
	case strings.HasPrefix(v, archive.CommitState):
		return "state object " + v[len(archive.CommitState):] + " (below)"
	}
	return fmt.Sprintf("%q (not pqsink's format)", v)
}

// printTableState prints the exactly-once state: which snapshot carries
// it, and each partition's committed offset and paths beyond it.
func printTableState(w io.Writer, md itable.Metadata, state table.State) {
	from := int64(0)
	for s := md.CurrentSnapshot(); s != nil; {
		if s.Summary != nil {
			if _, ok := s.Summary.Properties[table.SummaryState]; ok {
				from = s.SnapshotID
				break
			}
		}
		if s.ParentSnapshotID == nil {
			break
		}
		s = md.SnapshotByID(*s.ParentSnapshotID)
	}
	if len(state) == 0 {
		fmt.Fprintf(w, "pqsink state: none (no snapshot of the current one's ancestry carries %s)\n", table.SummaryState)
		return
	}
	fmt.Fprintf(w, "pqsink state (%s of snapshot %d): %d partitions\n", table.SummaryState, from, len(state))
	parts := make([]table.Partition, 0, len(state))
	for p := range state {
		parts = append(parts, p)
	}
	slices.SortFunc(parts, func(a, b table.Partition) int {
		return cmp.Or(strings.Compare(a.Group, b.Group), strings.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	for _, p := range parts {
		pr := state[p]
		fmt.Fprintf(w, "  group %s, topic %s, partition %d: committed %d", p.Group, p.Topic, p.Partition, pr.Committed)
		if len(pr.Paths) > 0 {
			fmt.Fprintf(w, ", %d paths beyond it", len(pr.Paths))
		}
		if pr.SpecID != nil {
			fmt.Fprintf(w, ", spec %d", *pr.SpecID)
		}
		fmt.Fprintln(w)
	}
}
