package connector

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pqsink/pqsink/internal/backoff"

	"github.com/pqsink/pqsink/archive"
	"github.com/pqsink/pqsink/connector/budget"
	"github.com/pqsink/pqsink/connector/deadletter"
	"github.com/pqsink/pqsink/connector/pathfields"
	"github.com/pqsink/pqsink/connector/tablecommit"
	"github.com/pqsink/pqsink/format"
	"github.com/pqsink/pqsink/internal/safetext"
	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/objstore"
	"github.com/pqsink/pqsink/reader"
	"github.com/pqsink/pqsink/rowgroup"
	"github.com/pqsink/pqsink/table"
)

// Rotation reasons, as logged and counted.
const (
	reasonRecords  = "records"
	reasonBytes    = "bytes"
	reasonInterval = "interval"
	reasonSchedule = "schedule"
	reasonShutdown = "shutdown"
	reasonMemory   = "memory"
	reasonStopped  = "partition-stopped"
	reasonSchema   = "schema" // avro: the record's schema does not fit the open file's
	// reasonRebalance: the partition moves to another member, which
	// starts where this file ends.
	reasonRebalance = "rebalance"
	// reasonUpsert: another file of an upsert table's partition ended,
	// and a commit lands every open file (its key index matches the
	// committed offset).
	reasonUpsert = "upsert"
)

// errRestart asks the partition's loop to drop what it holds and consume
// again from the committed offset (after an adoption or a failed upload).
var errRestart = format.ErrRestart

// record is one Kafka record as the partition sees it.
type record struct {
	offset  int64
	time    time.Time
	key     []byte
	value   []byte
	headers []rowgroup.Header
}

// committer commits one partition's offset with its metadata.
type committer func(ctx context.Context, offset int64, metadata string) error

// partition holds the state of one assigned Kafka partition: its open
// files, one per path, and its part of the exactly-once protocol. Only
// the partition's own goroutine touches it.
type partition struct {
	s      *Sink
	topic  string
	id     int32
	log    *slog.Logger
	commit committer

	committed int64 // the offset last committed: where a restart resumes
	next      int64 // the offset after the last record handled
	skip      skipSet
	files     map[string]*openFile
	spare     []*fileBuffers // buffers of finished files, for the next ones
	dec       format.Decoder // the format's side of the partition
	pending   []record       // records held back for the format's sample
	pendingAt time.Time

	path    pathIdentity // renders the records' path identity
	env     rowgroup.Envelope
	stopped error // errors: fail stopped the partition on this

	// skipChanged says the skip set holds an upload or an adoption that
	// is not committed yet.
	skipChanged bool

	// With a table: its committer, the files uploaded or adopted since the
	// last commitNow (handed to the committer there), and the generation's
	// context, in which the committer commits the Kafka offsets.
	table      *tablecommit.Committer
	handoff    tablecommit.Batch // the files uploaded or adopted since the last commitNow
	genCtx     context.Context
	fresh      partFreshness       // the records' times, for the table's freshness metrics
	letters    []deadletter.Letter // dead letters not sent yet
	rejectedTo int64               // the offset of the last rejected record counted in the stats

	unreported counts // records counted, not yet added to the sink's stats

	lag atomic.Int64 // records between the fetch position and the partition's end

	// highest is the highest offset the partition has reached (next),
	// across restarts from the committed offset; advancedAt is when it
	// last grew (Unix nanoseconds), for /readyz: a partition with lag
	// whose highest offset stands still is stalled, even while it reads
	// the same records again and again.
	highest    int64
	advancedAt atomic.Int64

	uploadFailures int // uploads failed in a row: the backoff before reading again

	// left are the last commits this member made of the partition (or the
	// state it started from), newest last: a generation that keeps the
	// partition finds one of them committed, unless someone else held it
	// in between. With a table, only their offsets count.
	left []committed
	// rereadBelow is the highest offset this process had reached on the
	// partition before the records now being read: records below it are
	// read again (after a rebalance or a restart from the committed
	// offset).
	rereadBelow int64

	relief relief // the partition's side of the memory pressure relief

	up *upsert // an upsert table's: the key index and its changes (upsertpart.go)
}

// counts are records a partition consumed, wrote and read again, not
// yet added to the sink's stats: added once per batch (report), since an
// atomic add per record on counters that every partition shares costs
// more than the counting.
type counts struct {
	consumed, written, reread int64
}

// relief is a partition's side of the memory pressure relief: the
// relief's requests, and what the partition holds, published for it.
type relief struct {
	ctrl chan budget.Request // requests of the pressure relief
	wake func()              // called after a request: the partition has work
	mu   sync.Mutex          // guards mem, read by the pressure relief
	mem  budget.Stat
}

// pathIdentity renders a partition's records' path identity: the files'
// path template, the values of its {field} parts and where they come
// from, and what is rendered once for many records.
type pathIdentity struct {
	tmpl    *archive.Template // the files' path: the sink's, or its table's
	loc     *time.Location    // the time zone of the path's record times
	lookup  *pathfields.JSON
	vals    []string
	buf     []byte
	fixed   bool   // every record has the same identity: the path reads no time or field
	fixedID []byte // that identity, once rendered
	// With a path that reads the record's time and nothing else, buf
	// holds the identity of every record whose time is in [lo, hi) when
	// window: rendered once per day (or hour...), not per record.
	timeOnly bool
	window   bool
	lo, hi   time.Time

	// Two kinds of values come from a record's payload, and each has its
	// own fields: with a table, the values of its partition fields (the
	// record's table partition); without one, the values of the object
	// path template's {field} parts and time_field.
	//
	// tableVals computes the table partition values from the record's
	// JSON text (a text format with the format's one schema).
	tableVals *tablePartValues
	// tableFromPayload says that the table partition values over payload
	// columns come from each record's binary payload, read with its
	// schema (payloadTablePart) by a Binary format's lookup: that of the
	// record's decoded schema (schemaValues.tablePart), or fixedTable
	// with the format's one schema (format.Format.Fixed).
	tableFromPayload bool
	fixedTable       *payloadTablePart
	// pathFromPayload says that, without a table, the object path
	// template's {field} parts and time_field take their values from each
	// record's binary payload, read with its schema (pathfields.Payload):
	// that of the record's decoded schema (schemaValues.pathFields), or
	// fixedPath with the format's one schema.
	pathFromPayload bool
	fixedPath       *pathfields.Payload
}

// newPartition returns the pipeline of Kafka partition id of topic, for a
// sink without a table.
func newPartition(s *Sink, topic string, id int32, committed int64, skip skipSet, commit committer) *partition {
	return newPartitionWithTable(s, topic, id, committed, skip, commit, nil)
}

// newPartitionWithTable is newPartition for a Kafka partition whose files
// go to the table of tc (none when nil). It is a Kafka partition's
// pipeline, not a table partition: the table partition of each record
// comes from its values (tableVals, payloadTablePart).
func newPartitionWithTable(s *Sink, topic string, id int32, committed int64, skip skipSet, commit committer, tc *tablecommit.Committer) *partition {
	p := &partition{
		s: s, topic: topic, id: id, commit: commit, path: pathIdentity{tmpl: s.tmpl, loc: s.loc}, table: tc,
		log:       s.log.With("topic", topic, "partition", id),
		committed: committed, next: committed, skip: skip, rejectedTo: -1,
		files:  map[string]*openFile{},
		relief: relief{ctrl: make(chan budget.Request, 1)},
	}
	sch := s.schema
	var fit format.FitFunc
	if tc != nil {
		// The table's partition values are in UTC, and its files carry
		// its field ids.
		p.path.tmpl, p.path.loc = tc.Template(), time.UTC
		if sch != nil {
			sch = tc.Table().Schema()
		} else {
			fit = tc.Fit
		}
	}
	part := format.Partition{Log: p.log, Schema: sch, Fit: fit}
	p.fresh.read = tc != nil && s.cfg.Table.FreshnessFromRead
	p.fresh.readAt = time.Now().UnixNano()
	p.highest = committed
	p.rereadBelow = s.reached(topic, id)
	p.advancedAt.Store(time.Now().UnixNano())
	paths := p.path.tmpl.Fields()
	f := s.format
	var compile schemaCompiler
	if tc != nil && f.Binary() {
		// The values come from each record's payload, read as its
		// shredder reads it (payloadTablePart).
		paths = nil
		p.path.tableFromPayload = len(tc.Computed()) > 0
		switch {
		case f.SchemaPerRecord():
			if p.path.tableFromPayload {
				compile.table = tc
				part.Paths = tc.LookupPaths()
			}
		case p.path.tableFromPayload && f.Fixed() != nil:
			var err error
			if p.path.fixedTable, err = newFixedTablePart(tc, f.Fixed()); err != nil {
				p.stopped = fmt.Errorf("table %s: partition fields: %w", tc.Name(), err) // checked when the table was opened: not met
			}
		}
	} else if tc != nil {
		paths = tc.LookupPaths()
		if f.SchemaPerRecord() {
			// Each schema's columns: schemaCompiler.
			if len(tc.Computed()) > 0 {
				compile.table, compile.textOpts = tc, f.TextOptions()
			}
		} else {
			var err error
			if p.path.tableVals, err = newTablePartValues(tc, f.TextOptions()); err != nil {
				p.stopped = err // checked when the table was opened: not met
			}
		}
	}
	if s.cfg.TimeField != "" {
		paths = append(paths[:len(paths):len(paths)], strings.Split(s.cfg.TimeField, "."))
	}
	if tc == nil && f.Binary() && len(paths) > 0 {
		p.path.pathFromPayload = true
		spec := s.pathFieldSpec()
		if f.SchemaPerRecord() {
			compile.pathFields = spec
			part.Paths = spec.Paths
		} else if fixed := f.Fixed(); fixed != nil {
			var err error
			if p.path.fixedPath, err = spec.Lookup(fixed); err != nil {
				p.stopped = fmt.Errorf("%s: %w", fixed.Name, err) // checked when the sink started: not met
			}
		}
		paths = nil
	}
	if compile.table != nil || compile.pathFields != nil {
		part.Compile = compile.compile
	}
	p.dec = f.NewDecoder(part)
	p.path.lookup = pathfields.NewJSON(paths)
	p.path.fixed = len(paths) == 0 && !p.path.tmpl.PerRecord() && !p.path.tableFromPayload && !p.path.pathFromPayload
	p.path.timeOnly = len(paths) == 0 && p.path.tmpl.PerRecord() && !p.path.tableFromPayload && !p.path.pathFromPayload
	p.path.vals = make([]string, len(p.path.tmpl.Fields()))
	return p
}

// handle takes one fetched record. It returns errRestart when the fetch
// must start again from p.committed, and any other error when the
// partition cannot go on.
func (p *partition) handle(ctx context.Context, r *record) error {
	if r.offset < p.next || p.stopped != nil {
		// Fetches may return records before the requested offset; a
		// stopped partition takes nothing more.
		return nil
	}
	p.next = r.offset + 1
	p.unreported.consumed++
	if r.offset < p.rereadBelow {
		p.unreported.reread++
	}
	if p.dec.Sampling() {
		if len(p.pending) == 0 {
			p.pendingAt = time.Now()
		}
		p.pending = append(p.pending, *r) // the fetcher never reuses a record's bytes
		p.holdFresh(p.freshAt(r))
		if p.dec.Sample(r.value) {
			return p.learn(ctx)
		}
		return nil
	}
	return p.write(ctx, r)
}

// checkBytes is how many bytes of record values an open file takes
// between two checks of its row group's size at most.
const checkBytes = 256 << 10

// write appends r to the open file of its path, opening one if needed.
func (p *partition) write(ctx context.Context, r *record) error {
	if max := p.s.cfg.MaxRecordBytes; max > 0 && int64(len(r.value)) > max {
		return p.reject(ctx, r, &rejection{Reason: rejectTooLarge, Err: fmt.Errorf("value of %d bytes exceeds max_record_bytes (%d)", len(r.value), max)})
	}
	var d format.Decoded
	var rej *rejection
	var err error
	var rowKey []byte // an upsert table's: the row's key
	if p.up != nil {
		var deleted bool
		d, rowKey, deleted, rej, err = p.change(ctx, r)
		if err == nil && rej == nil && deleted {
			return nil // a delete writes no row
		}
	} else {
		d, rej, err = p.dec.Decode(ctx, r.value, r.offset)
	}
	if err != nil {
		return err
	} else if rej != nil {
		return p.reject(ctx, r, rej)
	}
	id, err := p.identity(r, d)
	if err != nil {
		var rej *rejection
		if !errors.As(err, &rej) {
			rej = &rejection{Reason: rejectPath, Err: err}
			if classify(err) == rejectDecode {
				rej.Reason = rejectDecode
			}
		}
		return p.reject(ctx, r, rej)
	}
	if p.skip.skips(id, r.offset) {
		p.s.stats.skippedUploaded.Add(1)
		if p.up != nil {
			return p.noteRow(rowKey, r.offset) // the uploaded file holds the row
		}
		return nil
	}
	f := p.files[string(id)]
	var b *rowgroup.Builder
	if f != nil {
		if b = p.dec.Fits(f.buf.Buffers, d); b == nil {
			// Another schema: the file ends here, and the next one, with
			// this record's schema, starts at this record. r is in no file
			// yet, so the commit that follows the upload must stop at it:
			// committing past it would lose it to a crash before its file
			// is uploaded, and make a table's next file overlap the state.
			p.next = r.offset
			if err := p.finish(ctx, f, reasonSchema); err != nil {
				return err
			}
			p.next = r.offset + 1
			f = nil
			if p.skip.skips(id, r.offset) { // an adopted object holds this record
				p.s.stats.skippedUploaded.Add(1)
				if p.up != nil {
					return p.noteRow(rowKey, r.offset)
				}
				return nil
			}
		}
	}
	opened := f == nil
	if opened {
		if f, err = p.open(ctx, string(id), r.offset, d); err != nil {
			return err
		}
		if b = p.dec.Fits(f.buf.Buffers, d); b == nil {
			// Cannot happen: the buffers were made for d.
			p.discard(ctx, f)
			return p.reject(ctx, r, &rejection{Reason: rejectSchema, Err: fmt.Errorf("no builder for the record in its new file %s", f.key)})
		}
	}
	p.env = rowgroup.Envelope{Topic: p.topic, Partition: p.id, Offset: r.offset, Timestamp: r.time, Key: r.key, Headers: r.headers}
	var env *rowgroup.Envelope
	if p.s.cfg.Envelope {
		env = &p.env
	}
	if err := b.Append(d.Payload, env); err != nil {
		if opened {
			// The file's first offset must be that of its first record.
			p.discard(ctx, f)
		}
		return p.reject(ctx, r, &rejection{Reason: p.dec.Reason(err), Err: err})
	}
	f.last = r.offset
	f.records++
	if p.up != nil {
		if err := p.noteRow(rowKey, r.offset); err != nil {
			return err
		}
	}
	p.noteFresh(f, r)
	p.unreported.written++
	rot := &p.s.cfg.Rotate
	if rot.Records > 0 && f.records >= rot.Records {
		return p.finish(ctx, f, reasonRecords)
	}
	// Every 32 rows, or sooner when the rows are large: checked only every
	// 32 rows, 5 MiB records made row groups of 160 MiB whatever the
	// target, and the column buffers that held them grew to twice that.
	f.sinceCheck++
	f.sinceBytes += int64(len(r.value))
	if f.sinceCheck >= 32 || f.sinceBytes >= checkBytes {
		f.sinceCheck, f.sinceBytes = 0, 0
		// By length: the buffers keep their capacity across row groups.
		size, target := int64(f.buf.Group.Size()), p.s.rowGroupTarget()
		switch {
		case size >= target:
			if err := f.flush(p.s.writers); err != nil {
				return p.uploadFailed(ctx, f, err)
			}
			if rot.Bytes > 0 && f.written() >= rot.Bytes {
				return p.finish(ctx, f, reasonBytes)
			}
		case !f.reserved && size >= target/reserveAt:
			f.reserved = true
			f.buf.Group.Reserve(reserveRows(f.buf.Group.NumRows(), size, target))
		}
	}
	return nil
}

// A row group that has grown from empty (the file's first, or one after
// its buffers were released under memory pressure) to 1/reserveAt of its
// target has its buffers grown once to hold the rest. Grown by appends
// alone, they double on the way: every step copies what they hold (a
// tenth of the sink's CPU in `pqsink bench`), and the last can leave the
// buffers at twice the target, which the budget counts.
const reserveAt = 16

// reserveRows is the rows a row group of rows rows in size bytes will
// hold at target bytes, with a margin for rows larger than the first.
func reserveRows(rows int, size, target int64) int {
	if size <= 0 {
		return rows
	}
	return int(float64(rows) * float64(target) / float64(size) * 1.05)
}

// report adds the records counted since the last report to the stats,
// and notes the partition's progress.
func (p *partition) report() {
	p.refreshFresh()
	if p.next > p.highest {
		p.highest = p.next
		p.advancedAt.Store(time.Now().UnixNano())
	}
	if p.unreported.consumed != 0 {
		p.s.stats.consumed.Add(p.unreported.consumed)
		p.unreported.consumed = 0
	}
	if p.unreported.reread != 0 {
		p.s.stats.reread.Add(p.unreported.reread)
		p.unreported.reread = 0
	}
	if p.unreported.written != 0 {
		p.s.stats.written.Add(p.unreported.written)
		p.unreported.written = 0
	}
}

// identity renders r's path identity; d is r decoded.
func (p *partition) identity(r *record, d format.Decoded) ([]byte, error) {
	if p.path.fixedID != nil {
		return p.path.fixedID, nil
	}
	ts := r.time
	if p.path.timeOnly {
		if p.path.window && !ts.Before(p.path.lo) && ts.Before(p.path.hi) {
			return p.path.buf, nil
		}
		at := ts.In(p.path.loc)
		p.path.buf = p.path.tmpl.AppendIdentity(p.path.buf[:0], p.topic, p.id, at, p.path.vals)
		p.path.lo, p.path.hi, p.path.window = p.path.tmpl.Window(at)
		return p.path.buf, nil
	}
	if p.path.tableFromPayload {
		tp := p.path.fixedTable
		if d.Schema != nil {
			tp = d.Schema.Values.(*schemaValues).tablePart
		}
		if err := tp.values(d.Payload, p.path.vals); err != nil {
			return nil, err
		}
	} else if p.path.pathFromPayload {
		pp := p.path.fixedPath
		if d.Schema != nil {
			pp = d.Schema.Values.(*schemaValues).pathFields
		}
		t, err := pp.Values(d.Payload, p.path.vals)
		if err != nil {
			return nil, err
		}
		if p.s.cfg.TimeField != "" {
			ts = t
		}
	} else if p.path.lookup.Len() > 0 {
		text := r.value
		if d.Text != nil {
			text = d.Text
		}
		switch err := p.path.lookup.Lookup(text); {
		case errors.Is(err, pathfields.ErrNotObject) && p.s.cfg.TimeField != "":
			return nil, &rejection{Reason: rejectSchema, Err: fmt.Errorf("time_field %s: %w", p.s.cfg.TimeField, err)}
		case errors.Is(err, pathfields.ErrNotObject):
			// None of the fields is there (their values are null), and
			// the payload's shredder says whether the format takes it.
		case err != nil:
			return nil, fmt.Errorf("path fields: %w", err)
		}
		n := len(p.path.vals)
		var schemaVals *tablePartValues
		if d.Schema != nil && d.Schema.Values != nil {
			schemaVals = d.Schema.Values.(*schemaValues).tableVals
		}
		if tv := p.path.tableVals; tv != nil || schemaVals != nil {
			// A table's values are its partition values (time_field is
			// refused with a table).
			if schemaVals != nil {
				tv = schemaVals
			}
			if err := tv.values(p.path.lookup, p.path.vals); err != nil {
				return nil, err
			}
		} else {
			for i := range n {
				if p.path.lookup.Found(i) && p.path.lookup.Value(i) != "" {
					p.path.vals[i] = string(archive.AppendEscaped(p.path.buf[:0], p.path.lookup.Value(i)))
				} else {
					p.path.vals[i] = archive.HiveNull
				}
			}
		}
		if p.s.cfg.TimeField != "" {
			if !p.path.lookup.Found(n) || p.path.lookup.Value(n) == "" {
				return nil, fmt.Errorf("time_field %s is missing or null", p.s.cfg.TimeField)
			}
			t, err := pathfields.ParseRecordTime(p.path.lookup.Value(n))
			if err != nil {
				return nil, err
			}
			ts = t
		}
	}
	p.path.buf = p.path.tmpl.AppendIdentity(p.path.buf[:0], p.topic, p.id, ts.In(p.path.loc), p.path.vals)
	if p.path.fixed {
		p.path.fixedID = p.path.buf
	}
	return p.path.buf, nil
}

// open starts the file of path id whose first record, d, is at offset
// first. The format decides the file's schema from d.
func (p *partition) open(ctx context.Context, id string, first int64, d format.Decoded) (*openFile, error) {
	f := &openFile{id: id, key: archive.ObjectKey(id, first), first: first, last: first - 1, opened: time.Now()}
	if sched := p.s.cfg.Rotate.Schedule; sched > 0 {
		f.deadline = nextBoundary(f.opened, sched, p.s.loc)
	}
	buf, err := p.buffers(d)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.key, err)
	}
	f.buf = buf
	up, err := p.s.store.Create(ctx, f.key, objstore.ContentType("application/vnd.apache.parquet"))
	if err != nil {
		p.spare = append(p.spare, f.buf)
		return nil, fmt.Errorf("%s: starting upload: %w", f.key, err)
	}
	f.up = up
	f.buf.Group.Reset()
	p.files[id] = f
	p.s.stats.openFiles.Add(1)
	return f, nil
}

// discard drops an open file without uploading it.
func (p *partition) discard(ctx context.Context, f *openFile) {
	if err := f.abort(context.WithoutCancel(ctx)); err != nil {
		p.log.Warn("aborting upload", "key", f.key, "error", err)
	}
	if p.files[f.id] == f {
		delete(p.files, f.id)
		p.s.stats.openFiles.Add(-1)
	}
	p.forgetFresh(f.times)
	f.buf.Group.Reset()
	f.buf.w = nil // mid-file: not worth resetting for the pool
	p.spare = append(p.spare, f.buf)
}

// dropAll discards every open file and held record, to consume again from
// the committed offset.
func (p *partition) dropAll(ctx context.Context) {
	for _, f := range p.files {
		p.discard(ctx, f)
	}
	p.pending = nil
	p.droppedFresh()
	p.letters = p.letters[:0]
	p.rereadBelow = max(p.rereadBelow, p.next, p.highest)
	p.next = p.committed
	if p.up != nil {
		// The index holds the records dropped: it is that of the
		// committed offset again before its next use.
		p.up.stale = true
	}
}

// finish uploads f and commits. When an earlier owner already uploaded a
// file under f's key, f is dropped and that file adopted instead.
func (p *partition) finish(ctx context.Context, f *openFile, reason string) error {
	start := time.Now()
	if !p.s.cfg.Store.ConditionalWrites {
		// The store would overwrite: look before uploading.
		if _, err := p.s.store.Head(ctx, f.key); err == nil {
			return p.adopt(ctx, f)
		} else if !errors.Is(err, objstore.ErrNotExist) {
			return p.uploadFailed(ctx, f, err)
		}
	}
	md, err := f.close(p.s.writers, p.topic, p.id)
	if err != nil {
		return p.uploadFailed(ctx, f, err)
	}
	info, err := f.up.Commit(ctx)
	f.up = nil
	if errors.Is(err, objstore.ErrExists) {
		return p.adopt(ctx, f)
	}
	if err != nil {
		return p.uploadFailed(ctx, f, err)
	}
	delete(p.files, f.id)
	p.s.stats.openFiles.Add(-1)
	p.spare = append(p.spare, f.buf)
	p.skip.extend(f.id, f.last)
	p.skipChanged = true
	if p.table != nil {
		p.handoff.Append(p.table.File(f.key, f.id, info.Size, md), f.times)
	}
	p.uploadFailures = 0
	p.s.uploadFailingSince.Store(0)
	p.s.stats.fileUploaded(reason, info.Size, f.records)
	p.s.stats.uploadSeconds.Observe(time.Since(start).Seconds())
	p.log.Info("uploaded", "key", f.key, "records", f.records, "bytes", info.Size,
		"first_offset", f.first, "last_offset", f.last, "row_groups", len(md.RowGroups),
		"reason", reason, "took", time.Since(start).Round(time.Millisecond))
	return p.commitNow(ctx)
}

// uploadFailed handles a file that could not be written or uploaded: the
// store already retried, so drop everything and read again from the
// committed offset; nothing is lost, and nothing was committed past it.
// It waits first, longer after each failure in a row (up to 30 s): a store
// that refuses every upload (full, or denying writes) must not turn into
// a loop of reading the same records and failing again many times a
// second.
func (p *partition) uploadFailed(ctx context.Context, f *openFile, err error) error {
	p.uploadFailures++
	wait := min(30*time.Second, 500*time.Millisecond<<min(p.uploadFailures-1, 6))
	p.log.Error("upload failed; consuming again from the committed offset", "key", f.key, "committed", p.committed,
		"failures_in_a_row", p.uploadFailures, "retry_in", wait, "error", err)
	p.s.stats.uploadErrors.Add(1)
	p.s.uploadFailed(err)
	p.discard(ctx, f)
	p.dropAll(ctx)
	if !backoff.Sleep(ctx, wait) {
		return ctx.Err()
	}
	return errRestart
}

// adopt takes over the object that already exists under f's key: an
// earlier owner of the partition uploaded the file that starts at f's
// first record. Its footer tells how far it goes.
func (p *partition) adopt(ctx context.Context, f *openFile) error {
	rng, size, md, err := p.readRange(ctx, f.key)
	if err != nil {
		p.discard(ctx, f)
		return fmt.Errorf("adopting existing object %s: %w", f.key, err)
	}
	if rng.Topic != p.topic || rng.Partition != p.id || rng.First != f.first {
		p.discard(ctx, f)
		return fmt.Errorf("object %s exists but holds %s[%d] from offset %d, not this file: is another sink writing to the same path?",
			f.key, rng.Topic, rng.Partition, rng.First)
	}
	p.s.stats.adopted.Add(1)
	p.log.Info("adopted existing object", "key", f.key, "its_last_offset", rng.Last, "our_last_offset", f.last)
	p.skip.extend(f.id, rng.Last)
	p.skipChanged = true
	if p.table != nil {
		// Uploaded, perhaps never committed to the table (a crash between
		// the two): the next table commit appends it, or drops it if the
		// table already holds its records.
		p.handoff.Append(p.table.File(f.key, f.id, size, md), tablecommit.RecordTimes{Oldest: f.times.Oldest, Newest: f.times.Newest, Adopted: true})
	}
	p.discard(ctx, f)
	if rng.Last >= f.last {
		// The object holds every record of this path that f held, and
		// perhaps more, which the skip set now passes over: nothing to read
		// again.
		return p.commitNow(ctx)
	}
	// The object ends before f did: the records of f past its end must be
	// read again, and so must the other paths' records interleaved with them.
	p.dropAll(ctx)
	return errRestart
}

// readRange reads the Kafka range from the footer of the object at key,
// with the object's size and footer.
func (p *partition) readRange(ctx context.Context, key string) (archive.Range, int64, *meta.FileMetaData, error) {
	ra, err := p.s.store.NewReaderAt(ctx, key)
	if err != nil {
		return archive.Range{}, 0, nil, err
	}
	defer ra.Close()
	file, err := reader.Open(ra, ra.Size())
	if err != nil {
		return archive.Range{}, 0, nil, err
	}
	md := file.Metadata()
	rng, err := archive.ReadRange(md.KeyValueMetadata)
	return rng, ra.Size(), md, err
}

// commitNow commits the smallest first offset among the open files (or
// the next offset when none is open), with the skip set of the paths
// uploaded beyond it. It retries until the commit succeeds or ctx ends:
// a second upload of a path must not start before the first one's commit
// (exactly-once protocol, point 5).
func (p *partition) commitNow(ctx context.Context) error {
	if p.up != nil {
		// The key index, the deletes and the progress must agree on one
		// offset: every open file lands first, so the committed offset is
		// the next one. (Each finish commits again, landing the rest.)
		for len(p.files) > 0 {
			var oldest *openFile
			for _, f := range p.files {
				if oldest == nil || f.first < oldest.first {
					oldest = f
				}
			}
			if err := p.finish(ctx, oldest, reasonUpsert); err != nil {
				return err
			}
		}
	}
	offset := p.next
	for _, f := range p.files {
		offset = min(offset, f.first)
	}
	if len(p.pending) > 0 {
		offset = min(offset, p.pending[0].offset)
	}
	p.skip.prune(offset)
	if offset == p.committed && !p.skipChanged {
		return nil
	}
	if err := p.sendLetters(ctx); err != nil {
		return err
	}
	if p.table != nil {
		// The table commit comes first, and the Kafka commit after it, both
		// made by the table's committer: the files are uploaded, so reading
		// again from offset loses nothing while the committer holds them.
		paths := make(map[string]int64, len(p.skip))
		for id, last := range p.skip {
			paths[id] = last
		}
		// The paths follow the spec of the partition's view: the state
		// records it, for a partition resuming from them (ViewFor) and
		// against a late commit of another spec (table.SpecConflictError).
		spec := p.table.SpecID()
		handed := p.handoff
		progress := table.Progress{Committed: offset, Paths: paths, SpecID: &spec}
		if p.up != nil {
			chain, deletes, err := p.indexSnapshot(ctx)
			if err != nil {
				return p.indexFailed(ctx, err)
			}
			progress.Index, handed.Deletes = chain, deletes
		}
		p.table.Add(p.genCtx, p.id, handed, progress, p.offsetCommit())
		p.handoff = tablecommit.Batch{}
		p.handedFresh(handed.Times)
		p.committed = offset
		p.noteCommit(committed{offset: offset})
		p.skipChanged = false
		return nil
	}
	md, err := encodeMetadata(ctx, p.s.store, p.s.cfg.Kafka.Group, p.topic, p.id, offset, p.skip)
	if err != nil {
		return err
	}
	backoff := 100 * time.Millisecond
	for attempt := 1; ; attempt++ {
		start := time.Now()
		err := p.commit(ctx, offset, md)
		if err == nil {
			p.s.stats.commitLatency(time.Since(start))
			p.committed = offset
			p.skipChanged = false
			p.noteCommit(committed{offset: offset, metadata: md})
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if errors.Is(err, errGenerationOver) {
			return err
		}
		p.log.Warn("offset commit failed; retrying", "offset", offset, "attempt", attempt, "error", err)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

// reject handles a record that cannot be written, per the errors policy.
func (p *partition) reject(ctx context.Context, r *record, err *rejection) error {
	// The error may quote the record: escaped and cut short, it cannot
	// reach a terminal raw or make a log line of megabytes.
	err.Err = safetext.Error(err.Err)
	if p.s.cfg.Errors == "dead_letter" && p.skip.skips([]byte(deadLetterID), r.offset) {
		// An earlier owner of the partition made its dead letter durable.
		p.s.stats.skippedUploaded.Add(1)
		return nil
	}
	if r.offset > p.rejectedTo {
		// Counted once: after a restart from the committed offset, the
		// same record is rejected again.
		p.rejectedTo = r.offset
		p.s.stats.reject(err.Reason, p.s.cfg.Errors)
	}
	switch p.s.cfg.Errors {
	case "skip":
		p.log.Warn("record skipped", "offset", r.offset, "reason", err.Reason, "error", err)
		return nil
	case "dead_letter":
		p.log.Warn("record sent to the dead letters", "offset", r.offset, "reason", err.Reason, "error", err)
		p.letters = append(p.letters, newLetter(r, err))
		if len(p.letters) >= 1000 {
			return p.sendLetters(ctx)
		}
		return nil
	}
	p.log.Error("record rejected; partition stopped (errors: fail)", "offset", r.offset, "error", err)
	p.stopped = fmt.Errorf("%s[%d] offset %d: %w", p.topic, p.id, r.offset, err)
	// The files before the bad record are good: land them, so the committed
	// offset stops right at it.
	p.next = r.offset
	if err := p.finishAll(ctx, reasonStopped); err != nil {
		return err
	}
	return nil
}

// sendLetters makes the queued dead letters durable. It must run before
// any commit: a commit covers the offsets of the records they stand for.
// A failed send is tried again with backoff until it succeeds or ctx
// ends: the letters are at hand, and reading the records again would only
// make the same letters (a tight loop of fetches when the destination
// refuses them for a while).
func (p *partition) sendLetters(ctx context.Context) error {
	if len(p.letters) == 0 {
		return nil
	}
	var last int64
	backoff := 100 * time.Millisecond
	for attempt := 1; ; attempt++ {
		var err error
		if last, err = p.s.deadLetters.Send(ctx, p.topic, p.id, p.letters); err == nil {
			break
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		p.s.stats.deadLetterErrors.Add(1)
		p.log.Error("sending dead letters failed; retrying", "letters", len(p.letters),
			"first_offset", p.letters[0].Offset, "attempt", attempt, "retry_in", backoff, "error", err)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 10*time.Second)
	}
	p.letters = p.letters[:0]
	// The next owner must not send these letters again: what the commit
	// does not cover, the skip set does.
	p.skip.extend(deadLetterID, last)
	p.skipChanged = true
	return nil
}

// finishAll uploads every open file.
func (p *partition) finishAll(ctx context.Context, reason string) error {
	if len(p.pending) > 0 {
		if err := p.learn(ctx); err != nil {
			return err
		}
	}
	for len(p.files) > 0 {
		var oldest *openFile
		for _, f := range p.files {
			if oldest == nil || f.first < oldest.first {
				oldest = f
			}
		}
		if err := p.finish(ctx, oldest, reason); err != nil {
			return err
		}
	}
	return p.commitNow(ctx)
}

// tick rotates the files whose age or schedule says so, ends a format's
// sample that waited long enough, and commits progress made without files
// (records skipped or rejected).
func (p *partition) tick(ctx context.Context, now time.Time) error {
	defer p.report() // the records of a sample ended now
	if p.table != nil {
		if held, ok := p.table.TakeRestart(p.id); ok {
			return p.restartFromTable(ctx, held)
		}
		if p.up != nil {
			if err := p.table.Failure(p.id); err != nil {
				return err
			}
		}
	}
	if err := p.moveToSpec(ctx); err != nil {
		return err
	}
	if len(p.pending) > 0 && now.Sub(p.pendingAt) >= p.s.sampleWait {
		if err := p.learn(ctx); err != nil {
			return err
		}
	}
	interval := p.s.cfg.Rotate.Interval
	for _, f := range p.files {
		reason := ""
		switch {
		case interval > 0 && now.Sub(f.opened) >= interval:
			reason = reasonInterval
		case !f.deadline.IsZero() && !now.Before(f.deadline):
			reason = reasonSchedule
		default:
			continue
		}
		if err := p.finish(ctx, f, reason); err != nil {
			return err
		}
	}
	if len(p.files) == 0 && len(p.pending) == 0 && p.next != p.committed {
		return p.commitNow(ctx)
	}
	return nil
}

// learn ends the format's sample with the records held so far (a
// Variant shape is inferred from them), then writes them.
func (p *partition) learn(ctx context.Context) error {
	if err := p.dec.Learn(ctx); err != nil {
		return err
	}
	// The records not written yet stay pending while the others are: a
	// file that rotates meanwhile commits up to the first of them, never
	// beyond (commitNow).
	held := p.pending
	for i := range held {
		p.pending = held[i+1:]
		if err := p.write(ctx, &held[i]); err != nil {
			return err
		}
	}
	p.pending = nil
	return nil
}

// shutdown finishes (or abandons) every open file.
func (p *partition) shutdown(ctx context.Context, finish bool) error {
	defer p.report()
	if !finish {
		p.dropAll(ctx)
		return nil
	}
	return p.finishAll(ctx, reasonShutdown)
}

// handOver finishes every open file before the partition moves to another
// member: that member starts where the last file ends, and reads nothing
// again.
func (p *partition) handOver(ctx context.Context) error {
	defer p.report()
	return p.finishAll(ctx, reasonRebalance)
}

// maxLeft is how many of its last commits a partition remembers. With a
// table, progress is committed every table.commit_interval, so the
// table's state may be several commits behind.
const maxLeft = 64

// noteCommit remembers a commit of the partition.
func (p *partition) noteCommit(c committed) {
	if len(p.left) == maxLeft {
		p.left = append(p.left[:0], p.left[1:]...)
	}
	p.left = append(p.left, c)
}

// leftAt says whether c, the committed state read at a generation that
// keeps the partition, is one this member left: then nobody else held
// the partition in between, and its open files go on. With a table, the
// table's state is the authority and is compared instead (offsets only:
// the table merges the skip sets it is given); ctx is the generation's,
// in which the table's state is read once.
func (p *partition) leftAt(ctx context.Context, c committed) bool {
	if p.table != nil {
		tp, ok, err := p.table.State(ctx, p.id)
		if err != nil {
			return false
		}
		if !ok {
			return len(p.left) == 0 || p.left[0].offset == c.offset
		}
		c = committed{offset: tp.Committed}
	}
	for _, l := range p.left {
		if l.offset == c.offset && (p.table != nil || l.metadata == c.metadata) {
			return true
		}
	}
	return false
}

// offsetCommit returns the commit of the partition's Kafka offset with a
// state its table holds (tablecommit.OffsetCommit), which the committer
// calls from its own goroutine: the state objects written first, as for a
// commit without a table.
func (p *partition) offsetCommit() tablecommit.OffsetCommit {
	s, topic, id, commit := p.s, p.topic, p.id, p.commit
	return func(ctx context.Context, pr table.Progress) error {
		md, err := encodeMetadata(ctx, s.store, s.cfg.Kafka.Group, topic, id, pr.Committed, skipSet(pr.Paths))
		if err != nil {
			return err
		}
		start := time.Now()
		if err := commit(ctx, pr.Committed, md); err != nil {
			return err
		}
		s.stats.commitLatency(time.Since(start))
		return nil
	}
}

// restartAt makes the partition consume again from a committed state
// that someone else left: offset, its metadata and skip set.
func (p *partition) restartAt(offset int64, md string, skip skipSet) {
	p.committed, p.next, p.skip = offset, offset, skip
	p.skipChanged = false
	p.left = append(p.left[:0], committed{offset: offset, metadata: md})
}

// nextBoundary is the first instant after t that is a multiple of period
// since midnight in loc (for periods of a day or more, since the Unix
// epoch in loc).
func nextBoundary(t time.Time, period time.Duration, loc *time.Location) time.Time {
	t = t.In(loc)
	if period >= 24*time.Hour {
		_, off := t.Zone()
		local := t.Unix() + int64(off)
		p := int64(period / time.Second)
		next := (local/p + 1) * p
		return time.Unix(next-int64(off), 0)
	}
	midnight := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, loc)
	since := t.Sub(midnight)
	return midnight.Add((since/period + 1) * period)
}
