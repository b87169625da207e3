package source

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/pqsink/pqsink/archive"
	"github.com/pqsink/pqsink/format"
	"github.com/pqsink/pqsink/objstore"
)

// Options say what to replay and where. From and Topic are required; every
// other field has a working zero value.
type Options struct {
	// From is the store URL of the files: s3://bucket/prefix or
	// file:///dir. The config's store section gives the endpoint and
	// credentials for s3.
	From string
	// Topic is the target topic. It must exist.
	Topic string
	// StoreURL, when set, is the store the files are read from, and From
	// only names the replay (in the checkpoint and the log): the files
	// of a table are read from the warehouse, store.url. Defaults to
	// From.
	StoreURL string
	// Files, when set, are the objects to replay (keys in the store),
	// instead of every object listed under From: the data files of a
	// table's snapshot. Defaults to listing From.
	Files []Object
	// Earlier, with Files, are objects that are not replayed but may lend
	// a file of Files that another engine rewrote (no pqsink footer) the
	// records' schema its rewrite dropped: the files the rewrite replaced,
	// from the table's earlier snapshots. Those no longer in the store are
	// passed over. Defaults to none: only the files of Files lend.
	Earlier []Object

	// SourceTopics keeps only the files of these topics. Defaults to all.
	SourceTopics []string
	// Partitions keeps only these source partitions. Defaults to all.
	Partitions []int32
	// Since and Until keep records whose timestamp t has Since <= t < Until;
	// a zero time is no bound. Defaults to no bounds.
	Since, Until time.Time
	// FromOffset keeps records whose offset is at least FromOffset.
	// Defaults to 0.
	FromOffset int64
	// EndOffset, when positive, keeps records whose offset is less than
	// EndOffset (the CLI's --to-offset N is EndOffset N+1).
	// Defaults to 0: no bound.
	EndOffset int64

	// KeyHash produces each record to the partition its key hashes to (the
	// Java client's murmur2 partitioner; records without a key are spread)
	// instead of to the partition number it came from.
	// Defaults to false: the original partition.
	KeyHash bool
	// Subject is the Schema Registry subject Avro schemas are registered
	// under. Defaults to "<Topic>-value".
	Subject string
	// PathTemplate is the sink's path template, to place files by their
	// key without opening them. Defaults to the sink's default,
	// "{topic}/{topic}+{partition}+{first_offset}.parquet"; "" keeps it.
	PathTemplate string
	// PathTimezone, when set, says that the path template's
	// {record_time:…} parts render the Kafka timestamp in this zone (the
	// sink's time_field unset, its timezone): a key whose time bucket lies
	// outside Since..Until is then skipped without opening the file.
	// Defaults to nil: times are read from statistics only.
	PathTimezone *time.Location
	// Suffix selects the objects to read by the end of their key.
	// Defaults to ".parquet".
	Suffix string

	// Checkpoint is a local file that holds the checkpoint: read at start
	// when it exists, written as the replay goes. Defaults to none.
	Checkpoint string
	// StoreCheckpoint names a checkpoint kept in the store under
	// _pqsink/replay/<name>/ below the From prefix. Defaults to none.
	StoreCheckpoint string
	// CheckpointInterval is the least time between two checkpoint writes
	// while the replay runs. Defaults to 1s.
	CheckpointInterval time.Duration

	// Parallelism is the number of source partitions replayed at once,
	// each by a worker of its own (a partition's records stay in order:
	// one worker replays it). Defaults to GOMAXPROCS.
	Parallelism int
	// BatchRecords is the number of records produced per request batch.
	// Defaults to 10000.
	BatchRecords int
	// MaxMemory bounds what reading one file may hold (reader.MaxMemory).
	// Defaults to 1 GiB.
	MaxMemory int64

	// Progress receives the progress bar when ProgressBar is set (a
	// terminal). Defaults to none.
	Progress io.Writer
	// ProgressBar draws a bar with rate and ETA on Progress, redrawn in
	// place, instead of logging a progress line every ProgressInterval.
	// Defaults to false.
	ProgressBar bool
	// ProgressInterval is the time between two progress lines.
	// Defaults to 10s (a bar redraws every 200ms).
	ProgressInterval time.Duration
	// Log receives the replay's log. Defaults to discarding it.
	Log *slog.Logger

	// Store overrides the store opened from From (tests count reads
	// through it). Defaults to opening From.
	Store objstore.Store
	// Producer overrides the kafka-go Writer. Defaults to a Writer on the
	// config's brokers.
	Producer Producer
	// Registry overrides the Schema Registry used to register Avro
	// schemas. Defaults to the config's format.registry.
	Registry SchemaRegistrar
	// Formats overrides the registry of formats whose replay sides
	// (format.Replayer) encode the records of their files. Defaults to
	// every format (format/all).
	Formats *format.Registry
}

// Object is an object of the store, by key.
type Object struct {
	Key  string
	Size int64
	// Deleted, when set, are the rows of the object that its table
	// deleted (position deletes, deletion vectors): they are not
	// replayed. Defaults to nil: every row is.
	Deleted Deletions
	// Bounds, when set, are what the table's manifest says of the
	// object's records: an object they rule out of the replay is not
	// opened. Defaults to nil: the object is placed by its key or footer.
	Bounds *Bounds
}

// Deletions are rows of a file, by position: a row's index in the file,
// from 0.
type Deletions interface {
	// Contains says whether the row at position row is one of them.
	Contains(row int64) bool
	// Len is their number.
	Len() int64
}

// Producer writes messages to Kafka; *kafka.Writer is one. WriteMessages
// must keep the order of the messages of one partition and return only
// once they are acknowledged. It is called by several goroutines at once,
// one per worker, each with the messages of partitions of its own.
type Producer interface {
	WriteMessages(ctx context.Context, msgs ...kafka.Message) error
	Close() error
}

// SchemaRegistrar registers an Avro schema under a subject and returns its
// id, as POST /subjects/{subject}/versions of the Schema Registry does; the
// formats' replay sides take the same (format.ReplayEnv).
type SchemaRegistrar = format.SchemaRegistrar

// withDefaults fills in the defaults and checks the options.
func (o Options) withDefaults() (Options, error) {
	if o.From == "" {
		return o, errors.New("replay: --from is required")
	}
	if o.Topic == "" {
		return o, errors.New("replay: --topic is required")
	}
	if o.EndOffset <= 0 {
		o.EndOffset = math.MaxInt64
	}
	if o.FromOffset < 0 || o.EndOffset <= o.FromOffset {
		return o, fmt.Errorf("replay: offset range [%d, %d) is empty or negative", o.FromOffset, o.EndOffset)
	}
	if !o.Since.IsZero() && !o.Until.IsZero() && !o.Since.Before(o.Until) {
		return o, fmt.Errorf("replay: --since %s is not before --until %s", o.Since.Format(time.RFC3339), o.Until.Format(time.RFC3339))
	}
	if o.Checkpoint != "" && o.StoreCheckpoint != "" {
		return o, errors.New("replay: set --checkpoint or --store-checkpoint, not both")
	}
	if strings.ContainsAny(o.StoreCheckpoint, "/\x00") || o.StoreCheckpoint == "." || o.StoreCheckpoint == ".." {
		return o, fmt.Errorf("replay: --store-checkpoint %q: want a plain name, without '/'", o.StoreCheckpoint)
	}
	if o.Subject == "" {
		o.Subject = o.Topic + "-value"
	}
	if o.PathTemplate == "" {
		o.PathTemplate = archive.DefaultPath
	}
	if o.Suffix == "" {
		o.Suffix = ".parquet"
	}
	if o.CheckpointInterval <= 0 {
		o.CheckpointInterval = time.Second
	}
	if o.Parallelism <= 0 {
		o.Parallelism = runtime.GOMAXPROCS(0)
	}
	if o.BatchRecords <= 0 {
		o.BatchRecords = 10000
	}
	if o.MaxMemory <= 0 {
		o.MaxMemory = 1 << 30
	}
	if o.ProgressInterval <= 0 {
		o.ProgressInterval = 10 * time.Second
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	slices.Sort(o.SourceTopics)
	slices.Sort(o.Partitions)
	return o, nil
}

// filterText is the canonical form of the filters, kept in a checkpoint so
// that a checkpoint is not resumed by a different replay.
func (o Options) filterText() string {
	var b strings.Builder
	b.WriteString("topics=" + strings.Join(o.SourceTopics, ","))
	b.WriteString(" partitions=")
	for i, p := range o.Partitions {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(int(p)))
	}
	b.WriteString(" offsets=" + strconv.FormatInt(o.FromOffset, 10) + ".." + strconv.FormatInt(o.EndOffset, 10))
	for _, t := range []struct {
		name string
		t    time.Time
	}{{"since", o.Since}, {"until", o.Until}} {
		b.WriteString(" " + t.name + "=")
		if !t.t.IsZero() {
			b.WriteString(t.t.UTC().Format(time.RFC3339Nano))
		}
	}
	if o.KeyHash {
		b.WriteString(" partitioning=hash")
	}
	return b.String()
}

// keepTopic says whether the files of topic are replayed.
func (o *Options) keepTopic(topic string) bool {
	if len(o.SourceTopics) == 0 {
		return true
	}
	_, ok := slices.BinarySearch(o.SourceTopics, topic)
	return ok
}

// keepPartition says whether the files of partition p are replayed.
func (o *Options) keepPartition(p int32) bool {
	if len(o.Partitions) == 0 {
		return true
	}
	_, ok := slices.BinarySearch(o.Partitions, p)
	return ok
}

// keepTime says whether a record of timestamp ms (Unix milliseconds) is
// in the time range.
func (o *Options) keepTime(ms int64) bool {
	if !o.Since.IsZero() && ms < o.Since.UnixMilli() {
		return false
	}
	if !o.Until.IsZero() && ms >= o.Until.UnixMilli() {
		return false
	}
	return true
}

// timeMayMatch says whether timestamps in [lo, hi] may be in the range.
func (o *Options) timeMayMatch(lo, hi int64) bool {
	if !o.Since.IsZero() && hi < o.Since.UnixMilli() {
		return false
	}
	if !o.Until.IsZero() && lo >= o.Until.UnixMilli() {
		return false
	}
	return true
}
