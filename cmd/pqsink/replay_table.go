package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"

	"github.com/pqsink/pqsink/config"
	"github.com/pqsink/pqsink/connector/source"
	"github.com/pqsink/pqsink/table"
)

// tableScheme starts a --from that names a table's snapshot rather than a
// prefix: iceberg:NAMESPACE.TABLE, or iceberg:NAMESPACE.TABLE@SNAPSHOT_ID.
const tableScheme = "iceberg:"

// tablePathTemplate places a table's data file by its key: the folders
// (the table's location and partition folders) make the path identity,
// and the file name says the topic, partition and first offset, as the
// sink names a table's files. A key that does not match has its footer
// read instead.
const tablePathTemplate = "{field:table_path}/{topic}+{partition}+{first_offset}.parquet"

// tableRef is a parsed iceberg: --from.
type tableRef struct {
	ident    []string // namespace levels, then the table's name
	snapshot int64    // 0: the current snapshot
}

// parseTableRef reads iceberg:NAMESPACE.TABLE[@SNAPSHOT_ID]. A table name
// may hold dots (a topic's): when the text starts with the configured
// table.namespace and a dot, the rest is the table's name; otherwise the
// name is what follows the last dot.
func parseTableRef(from, namespace string) (tableRef, error) {
	var ref tableRef
	text, ok := strings.CutPrefix(from, tableScheme)
	if !ok {
		return ref, fmt.Errorf("--from %q is not %sNAMESPACE.TABLE", from, tableScheme)
	}
	if name, id, ok := strings.Cut(text, "@"); ok {
		n, err := strconv.ParseInt(id, 10, 64)
		if err != nil || n <= 0 {
			return ref, usagef("--from %q: the snapshot after '@' must be a snapshot id (a positive number), got %q", from, id)
		}
		text, ref.snapshot = name, n
	}
	if rest, ok := strings.CutPrefix(text, namespace+"."); ok && namespace != "" && rest != "" {
		ref.ident = append(strings.Split(namespace, "."), rest)
	} else if i := strings.LastIndexByte(text, '.'); i > 0 && i < len(text)-1 {
		ref.ident = append(strings.Split(text[:i], "."), text[i+1:])
	}
	if len(ref.ident) < 2 || slices.Contains(ref.ident, "") {
		return ref, usagef("--from %q: want %sNAMESPACE.TABLE or %sNAMESPACE.TABLE@SNAPSHOT_ID", from, tableScheme, tableScheme)
	}
	return ref, nil
}

// tableFiles resolves a table's snapshot to the objects of the store
// (store.url, the warehouse) that are its data files, through the catalog
// of the config's table section. It returns the snapshot as it names the
// replay, iceberg:NAMESPACE.TABLE@SNAPSHOT_ID, so that a checkpoint
// resumes the same snapshot.
func tableFiles(ctx context.Context, cfg *config.Config, ref tableRef) (string, tableObjects, error) {
	if cfg.Table == nil {
		return "", tableObjects{}, errors.New("--from iceberg: needs the config's table section: its catalog says where the table is (table.catalog)")
	}
	cat, err := table.Open(ctx, cfg)
	if err != nil {
		return "", tableObjects{}, err
	}
	defer cat.Close()
	snap, err := cat.Snapshot(ctx, ref.ident, ref.snapshot)
	if err != nil {
		return "", tableObjects{}, err
	}
	url := strings.TrimSuffix(cfg.Store.URL, "/")
	files := make([]source.Object, 0, len(snap.Files))
	for _, f := range snap.Files {
		key, ok := strings.CutPrefix(f.Location, url+"/")
		if !ok || key == "" {
			return "", tableObjects{}, fmt.Errorf("table %s, snapshot %d: data file %s is not under store.url %s: replay reads a table's files from the config's store", snap.Table, snap.ID, f.Location, url)
		}
		obj := source.Object{Key: key, Size: f.Size, Bounds: manifestBounds(f.Envelope)}
		if f.Deleted != nil {
			obj.Deleted = f.Deleted
		}
		files = append(files, obj)
	}
	// The files the table's rewrites replaced, for a file another engine
	// rewrote to borrow the records' schema from (those outside the store
	// are not the sink's).
	var earlier []source.Object
	for _, f := range snap.Earlier {
		if key, ok := strings.CutPrefix(f.Location, url+"/"); ok && key != "" {
			earlier = append(earlier, source.Object{Key: key, Size: f.Size})
		}
	}
	return fmt.Sprintf("%s%s@%d", tableScheme, snap.Table, snap.ID), tableObjects{files: files, earlier: earlier}, nil
}

// tableObjects are the objects of a table's snapshot that a replay reads:
// its data files, and the earlier files that may lend them a schema
// (source.Options.Earlier).
type tableObjects struct {
	files, earlier []source.Object
}

// replayFromTable points opts at the data files of the snapshot that
// opts.From names (iceberg:NAMESPACE.TABLE[@SNAPSHOT_ID]): they are read
// from the config's store, placed by their keys, and nothing else under
// the store is.
func replayFromTable(ctx context.Context, cfg *config.Config, opts *source.Options, log *slog.Logger) error {
	namespace := ""
	if cfg.Table != nil {
		namespace = cfg.Table.Namespace
	}
	ref, err := parseTableRef(opts.From, namespace)
	if err != nil {
		return err
	}
	name, objs, err := tableFiles(ctx, cfg, ref)
	if err != nil {
		return err
	}
	files := objs.files
	var withDeletes, deleted int64
	for _, f := range files {
		if f.Deleted != nil {
			withDeletes++
			deleted += f.Deleted.Len()
		}
	}
	log.Info("replaying a table's snapshot", "table", strings.Join(ref.ident, "."), "snapshot", name, "files", len(files),
		"files_with_deletes", withDeletes, "deleted_rows", deleted, "store", cfg.Store.URL)
	opts.From, opts.StoreURL, opts.Files, opts.Earlier = name, cfg.Store.URL, files, objs.earlier
	opts.PathTemplate, opts.PathTimezone = tablePathTemplate, nil
	return nil
}

// manifestBounds are the bounds of a data file's records that its
// manifest entry gives, for the replay to pass over a file they rule out
// without opening it: the timestamps in the replay's milliseconds (the
// table's microseconds divided by 1000, rounding toward zero as the
// replay does each record's), or nil when the manifest bounds nothing.
func manifestBounds(e table.Envelope) *source.Bounds {
	if e == (table.Envelope{}) {
		return nil
	}
	ints := func(r table.Range[int64], div int64) source.IntRange {
		return source.IntRange{Min: r.Min / div, Max: r.Max / div, HasMin: r.HasMin, HasMax: r.HasMax}
	}
	return &source.Bounds{
		Time:      ints(e.Timestamp, 1000),
		Offset:    ints(e.Offset, 1),
		Partition: ints(e.Partition, 1),
		Topic:     source.StringRange{Min: e.Topic.Min, Max: e.Topic.Max, HasMin: e.Topic.HasMin, HasMax: e.Topic.HasMax},
	}
}
