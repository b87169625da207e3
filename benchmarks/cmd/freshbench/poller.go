package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	iceio "github.com/apache/iceberg-go/io"
	itable "github.com/apache/iceberg-go/table"
	"github.com/parquet-go/parquet-go"
	"github.com/uptrace/bun/driver/pgdriver"
	_ "modernc.org/sqlite"
)

// openCatalog opens the SQL catalog at uri (sqlite://FILE or
// postgres://...) with a connection of its own: the poller and the
// sampler read the table as an outside reader would.
func openCatalog(uri, warehouse string) (catalog.Catalog, *sql.DB, error) {
	var db *sql.DB
	dialect := sqlcat.Postgres
	if file, ok := strings.CutPrefix(uri, "sqlite://"); ok {
		var err error
		if db, err = sql.Open("sqlite", "file:"+file+"?_pragma=busy_timeout(10000)"); err != nil {
			return nil, nil, err
		}
		dialect = sqlcat.SQLite
	} else {
		db = sql.OpenDB(pgdriver.NewConnector(pgdriver.WithDSN(uri)))
	}
	cat, err := sqlcat.NewCatalog("pqsink", db, dialect, iceberg.Properties{"warehouse": warehouse})
	if err != nil {
		db.Close()
		return nil, nil, fmt.Errorf("opening the catalog: %w", err)
	}
	return cat, db, nil
}

// poller watches the table for new snapshots, as a reader waiting for
// data would, and computes each new record's freshness: from its Kafka
// timestamp (the _kafka.timestamp column of the rows) to the commit time
// of the first snapshot that holds it. Compactions' snapshots (replace)
// hold no new records and are skipped.
type poller struct {
	cat   catalog.Catalog
	ident itable.Identifier

	mu      sync.Mutex
	ages    []float64 // seconds, since the last take
	maxLag  float64   // seconds from a snapshot's commit to the poll that saw it, since the last take
	rows    int64     // new records seen in all
	lastSeq int64     // the newest snapshot's sequence number read
	err     error     // the last poll's, if it failed
}

// run polls every interval until ctx ends.
func (p *poller) run(ctx context.Context, every time.Duration) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		err := p.poll(ctx)
		p.mu.Lock()
		p.err = err
		p.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// poll reads the snapshots committed since the last poll.
func (p *poller) poll(ctx context.Context) error {
	tbl, err := p.cat.LoadTable(ctx, p.ident)
	if errors.Is(err, catalog.ErrNoSuchTable) {
		return nil // its first record creates it
	}
	if err != nil {
		return err
	}
	seen := time.Now()
	fs, err := tbl.FS(ctx)
	if err != nil {
		return err
	}
	snaps := slices.Clone(tbl.Metadata().Snapshots())
	slices.SortFunc(snaps, func(a, b itable.Snapshot) int { return int(a.SequenceNumber - b.SequenceNumber) })
	for _, s := range snaps {
		if s.SequenceNumber <= p.lastSeq {
			continue
		}
		if s.Summary == nil || s.Summary.Operation != itable.OpReplace {
			if err := p.read(ctx, fs, s, seen); err != nil {
				return fmt.Errorf("snapshot %d: %w", s.SnapshotID, err)
			}
		}
		p.lastSeq = s.SequenceNumber
	}
	return nil
}

// read takes the ages of the records in the data files s added.
func (p *poller) read(ctx context.Context, fs iceio.IO, s itable.Snapshot, seen time.Time) error {
	manifests, err := s.Manifests(fs)
	if err != nil {
		return err
	}
	commit := float64(s.TimestampMs) / 1e3
	var ages []float64
	for _, m := range manifests {
		if m.SnapshotID() != s.SnapshotID || m.ManifestContent() != iceberg.ManifestContentData {
			continue
		}
		entries, err := m.FetchEntries(fs, true)
		if err != nil {
			return err
		}
		for _, e := range entries {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if e.Status() != iceberg.EntryStatusADDED || e.SnapshotID() != s.SnapshotID || e.DataFile().ContentType() != iceberg.EntryContentData {
				continue
			}
			if ages, err = fileAges(fs, e.DataFile().FilePath(), commit, ages); err != nil {
				return err
			}
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ages = append(p.ages, ages...)
	p.rows += int64(len(ages))
	p.maxLag = max(p.maxLag, seen.Sub(time.UnixMilli(s.TimestampMs)).Seconds())
	return nil
}

// fileAges appends the age at commit (Unix seconds) of each row of the
// Parquet file at path, from its _kafka.timestamp.
func fileAges(fs iceio.IO, path string, commit float64, ages []float64) ([]float64, error) {
	f, err := fs.Open(path)
	if err != nil {
		return ages, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return ages, err
	}
	pf, err := parquet.OpenFile(f, st.Size())
	if err != nil {
		return ages, fmt.Errorf("%s: %w", path, err)
	}
	leaf, ok := pf.Schema().Lookup("_kafka", "timestamp")
	if !ok {
		return ages, fmt.Errorf("%s: no _kafka.timestamp column", path)
	}
	values := make([]parquet.Value, 4096)
	for _, rg := range pf.RowGroups() {
		pages := rg.ColumnChunks()[leaf.ColumnIndex].Pages()
		for {
			page, err := pages.ReadPage()
			if err == io.EOF {
				break
			}
			if err != nil {
				pages.Close()
				return ages, fmt.Errorf("%s: %w", path, err)
			}
			r := page.Values()
			for {
				n, err := r.ReadValues(values)
				for _, v := range values[:n] {
					if !v.IsNull() {
						ages = append(ages, commit-unixSeconds(v.Int64()))
					}
				}
				if err == io.EOF {
					break
				}
				if err != nil {
					parquet.Release(page)
					pages.Close()
					return ages, fmt.Errorf("%s: %w", path, err)
				}
			}
			parquet.Release(page)
		}
		pages.Close()
	}
	return ages, nil
}

// unixSeconds reads a timestamp in milliseconds, microseconds or
// nanoseconds (table.timestamp_precision) by its magnitude: any time
// of this century is told apart.
func unixSeconds(v int64) float64 {
	switch {
	case v > 1e17:
		return float64(v) / 1e9
	case v > 1e14:
		return float64(v) / 1e6
	default:
		return float64(v) / 1e3
	}
}

// take returns the ages read since the last take, and the longest lag
// from a commit to the poll that saw it.
func (p *poller) take() (ages []float64, lag float64, rows int64, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	ages, lag, rows, err = p.ages, p.maxLag, p.rows, p.err
	p.ages, p.maxLag = nil, 0
	return ages, lag, rows, err
}

// seenRows is how many new records the poller has read in all.
func (p *poller) seenRows() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.rows
}

// tableShape is what the sampler reads of the table's current snapshot.
type tableShape struct {
	live, manifests, snapshots int
	metadataBytes              int64
	load, plan                 time.Duration // loading the table; iceberg-go's scan planning
	records                    int64         // total-records of the current snapshot
}

// shape loads the table and plans a full scan of it with iceberg-go.
func shape(ctx context.Context, cat catalog.Catalog, ident itable.Identifier) (tableShape, error) {
	var sh tableShape
	start := time.Now()
	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		return sh, err
	}
	sh.load = time.Since(start)
	start = time.Now()
	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		return sh, fmt.Errorf("planning a scan: %w", err)
	}
	sh.plan = time.Since(start)
	sh.live = len(tasks)
	sh.snapshots = len(tbl.Metadata().Snapshots())
	fs, err := tbl.FS(ctx)
	if err != nil {
		return sh, err
	}
	if snap := tbl.CurrentSnapshot(); snap != nil {
		ms, err := snap.Manifests(fs)
		if err != nil {
			return sh, err
		}
		sh.manifests = len(ms)
		if snap.Summary != nil {
			fmt.Sscan(snap.Summary.Properties["total-records"], &sh.records)
		}
	}
	f, err := fs.Open(tbl.MetadataLocation())
	if err != nil {
		return sh, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return sh, err
	}
	sh.metadataBytes = st.Size()
	return sh, nil
}
