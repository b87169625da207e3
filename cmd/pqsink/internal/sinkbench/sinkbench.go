// Package sinkbench measures the sink end to end: it loads reference
// events (package events) into a topic, runs the sink on them into a
// store, and reports throughput, memory and output size. `pqsink bench`
// and `pqsink demo` run it.
//
// By default the broker is an in-process Kafka (franz-go's kfake) started
// in a child process, so that the broker's memory (it holds every record)
// does not count in the sink's peak RSS.
package sinkbench

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/pqsink/pqsink/archive"
	"github.com/pqsink/pqsink/config"
	"github.com/pqsink/pqsink/connector"
	"github.com/pqsink/pqsink/internal/events"
	"github.com/pqsink/pqsink/internal/memlimit"
)

// Options configure a run.
type Options struct {
	Records    int    // events to load and archive. Defaults to 1,000,000.
	Partitions int    // partitions of the topic. Defaults to 4.
	Format     string // json, variant or protobuf. Defaults to json.
	Topic      string // Defaults to "events".
	// Brokers of an existing Kafka; empty starts a broker in a child
	// process (BrokerCommand) or, with InProcessBroker, in this one.
	Brokers         []string
	InProcessBroker bool
	// BrokerCommand starts the child broker: the command must run
	// ServeBroker. Defaults to this executable with "__broker".
	BrokerCommand []string
	// Store is the store URL. Defaults to a new temporary directory,
	// removed at the end unless KeepOutput.
	Store      string
	StoreExtra string // YAML lines added to the store section (endpoint, keys)
	KeepOutput bool
	Codec      string // Defaults to zstd.
	Memory     string // memory.limit, e.g. "256MiB". Defaults to the sink's default.
	// RecordBytes pads each event to this many bytes of JSON with a long
	// user name (random letters, which compress little), and sets
	// max_record_bytes to it: the large records of a memory test. Zero
	// leaves the events at their size (about 210 bytes).
	RecordBytes int64
	Envelope    bool
	Path        string // the path template. Defaults to {topic}/{topic}+{partition}+{first_offset}.parquet
	// Table, when set, lands the topic in an Iceberg table: "sqlite" for a
	// SQLite catalog in a temporary folder, or a postgres:// URI; the
	// table is created in namespace bench (bench_{nanoseconds} in a
	// PostgreSQL catalog, which outlives the run), partitioned by day of
	// the record time, and the run ends when the last file is in the table.
	Table string
	// CommitInterval is table.commit_interval. Defaults to 10s.
	CommitInterval time.Duration
	// RotateInterval is rotate.interval; zero keeps the sink's default.
	RotateInterval time.Duration
	Shred          string // format.shred of variant. Defaults to the sink's default.
	Extra          string // YAML added at the end of the configuration (a table section). Defaults to none.
	// Progress receives a line per second while the sink runs.
	Progress io.Writer
	Log      *slog.Logger // the sink's log. Defaults to discarding.
}

// Report is what a run measured.
type Report struct {
	// Encoding is how the record values were encoded: JSON or Protobuf.
	Encoding      string
	Records       int64
	InputBytes    int64 // bytes of record values
	Load          time.Duration
	Seconds       float64 // sink start to the last file uploaded
	RecordsPerSec float64
	InputMBPerSec float64
	PeakRSS       int64 // bytes, this process, measured from the sink's start
	// CPUSeconds is the user and system time of this process from the
	// sink's start to the last upload: unlike Seconds, it hardly depends
	// on what else the machine runs.
	CPUSeconds float64
	// Drain is the part of Seconds after the last record was consumed:
	// finishing the open files (their last row groups and footers).
	Drain          float64
	Files          int64
	OutputBytes    int64
	BytesPerRecord float64
	Store          string
	// TableFormatVersion is the Iceberg format version of the table the
	// sink lands in (the config's table.format_version, whose default
	// depends on the format); 0 without a table.
	TableFormatVersion int
	Stats              connector.Snapshot
	Memory             connector.MemoryStats
}

// String renders the report for people.
func (r Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "records        %d (%.1f MB of %s, %.0f bytes/record)\n", r.Records, float64(r.InputBytes)/1e6, r.encoding(), float64(r.InputBytes)/float64(max(r.Records, 1)))
	fmt.Fprintf(&b, "load           %.1fs (producing into Kafka, not measured)\n", r.Load.Seconds())
	fmt.Fprintf(&b, "sink           %.2fs until the last file was uploaded (the last %.2fs finishing files)\n", r.Seconds, r.Drain)
	fmt.Fprintf(&b, "throughput     %.0f records/s, %.1f MB/s of input\n", r.RecordsPerSec, r.InputMBPerSec)
	fmt.Fprintf(&b, "cpu            %.2fs of this process (%.0f records per CPU-second)\n", r.CPUSeconds, float64(r.Records)/max(r.CPUSeconds, 1e-9))
	fmt.Fprintf(&b, "peak RSS       %.1f MiB\n", float64(r.PeakRSS)/(1<<20))
	fmt.Fprintf(&b, "output         %d files, %.1f MB, %.1f bytes/record (%.1fx smaller than the %s)\n", r.Files, float64(r.OutputBytes)/1e6, r.BytesPerRecord, float64(r.InputBytes)/float64(max(r.OutputBytes, 1)), r.encoding())
	fmt.Fprintf(&b, "memory         budget %.0f MiB, %d fetches paused for it, %d row groups written early, %d files rotated for it\n",
		float64(r.Memory.Limit)/(1<<20), r.Memory.FetchPauses, r.Stats.MemoryFlushes, r.Stats.Files["memory"])
	if st := r.Stats; st.TableCommits > 0 {
		fmt.Fprintf(&b, "table          %d commits (mean %.0f ms, longest %.0f ms, %d conflicts), %d files appended, %d records not in the table\n",
			st.TableCommits, float64(st.TableCommitTime.Milliseconds())/float64(st.TableCommits), float64(st.TableCommitMax.Microseconds())/1e3,
			st.TableConflicts, st.TableFilesAppended, st.TablePendingRecords)
	}
	fmt.Fprintf(&b, "store          %s\n", r.Store)
	return b.String()
}

// encoding is Encoding, JSON when unset.
func (r Report) encoding() string {
	if r.Encoding == "" {
		return "JSON"
	}
	return r.Encoding
}

func (o *Options) defaults() error {
	if o.Records <= 0 {
		o.Records = 1_000_000
	}
	if o.Partitions <= 0 {
		o.Partitions = 4
	}
	if o.Format == "" {
		o.Format = "json"
	}
	if _, ok := workloads[o.Format]; !ok {
		return fmt.Errorf("format %q: want %s or %s", o.Format, strings.Join(workloadNames[:len(workloadNames)-1], ", "), workloadNames[len(workloadNames)-1])
	}
	if o.Topic == "" {
		o.Topic = "events"
	}
	if o.Codec == "" {
		o.Codec = "zstd"
	}
	if o.Path == "" {
		o.Path = archive.DefaultPath
	}
	if o.Log == nil {
		o.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if o.CommitInterval <= 0 {
		o.CommitInterval = 10 * time.Second
	}
	if o.Table != "" && o.Table != "sqlite" && !strings.HasPrefix(o.Table, "postgres://") && !strings.HasPrefix(o.Table, "postgresql://") {
		return fmt.Errorf("table %q: want sqlite or a postgres:// URI", o.Table)
	}
	return nil
}

// Run loads the events and archives them.
func Run(ctx context.Context, o Options) (Report, error) {
	var rep Report
	if err := o.defaults(); err != nil {
		return rep, err
	}
	rep.Encoding = workloads[o.Format].encoding
	brokers := o.Brokers
	loadStart := time.Now()
	switch {
	case len(brokers) > 0:
		n, err := LoadFormat(ctx, brokers, o.Topic, o.Format, o.Records, o.RecordBytes)
		if err != nil {
			return rep, err
		}
		rep.InputBytes = n
	case o.InProcessBroker:
		b, err := StartBroker(o.Partitions, o.Topic, o.RecordBytes)
		if err != nil {
			return rep, err
		}
		defer b.Close()
		brokers = b.ListenAddrs()
		n, err := LoadFormat(ctx, brokers, o.Topic, o.Format, o.Records, o.RecordBytes)
		if err != nil {
			return rep, err
		}
		rep.InputBytes = n
	default:
		child, addr, n, err := startChildBroker(ctx, o)
		if err != nil {
			return rep, err
		}
		defer child.stop()
		brokers, rep.InputBytes = []string{addr}, n
	}
	rep.Load = time.Since(loadStart)

	storeURL := o.Store
	if storeURL == "" {
		dir, err := os.MkdirTemp("", "pqsink-bench-")
		if err != nil {
			return rep, err
		}
		if !o.KeepOutput {
			defer os.RemoveAll(dir)
		}
		storeURL = "file://" + dir
	}
	rep.Store = storeURL
	cfgDir, err := os.MkdirTemp("", "pqsink-bench-cfg-")
	if err != nil {
		return rep, err
	}
	defer os.RemoveAll(cfgDir)
	cfg, err := sinkConfig(o, brokers, storeURL, cfgDir)
	if err != nil {
		return rep, err
	}
	if cfg.Table != nil {
		rep.TableFormatVersion = cfg.Table.FormatVersion
	}

	memlimit.Set(cfg.Memory.Limit) // as `pqsink run` does
	// What the process allocated before (loading the broker, package
	// initialization: iceberg-go's alone is 32 MB) is garbage the sink
	// does not hold: give it back first, so the peak is the sink's.
	debug.FreeOSMemory()
	resetPeakRSS()
	start, cpuStart := time.Now(), cpuTime()
	sink, err := connector.New(ctx, cfg, o.Log)
	if err != nil {
		return rep, err
	}
	defer sink.Close()
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan error, 1)
	go func() { done <- sink.Run(runCtx) }()
	if o.Progress != nil {
		fmt.Fprintf(o.Progress, "pqsink: %d records loaded in %.1fs; the sink is archiving them\n", o.Records, rep.Load.Seconds())
	}

	// Once every record is consumed, a shutdown finishes the open files:
	// the run ends when the last footer is in the store.
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	nextProgress := time.Now().Add(time.Second)
	for sink.Stats().Snapshot().Consumed < int64(o.Records) {
		select {
		case err := <-done:
			if err == nil {
				err = errors.New("the sink stopped before consuming every record")
			}
			return rep, err
		case <-ctx.Done():
			return rep, ctx.Err()
		case now := <-tick.C:
			if o.Progress != nil && now.After(nextProgress) {
				nextProgress = now.Add(time.Second)
				st := sink.Stats().Snapshot()
				mem := sink.Memory()
				fmt.Fprintf(o.Progress, "pqsink: %d/%d records consumed, %d uploaded in %d files (%.0f records/s), memory %d/%d MiB\n",
					st.Consumed, o.Records, st.RecordsUploaded, sumFiles(st.Files), float64(st.Consumed)/time.Since(start).Seconds(), mem.Used>>20, mem.Limit>>20)
			}
		}
	}
	if path := os.Getenv("PQSINK_HEAPPROFILE"); path != "" {
		// The heap with every file open, before the shutdown finishes them.
		if err := writeHeapProfile(path); err != nil {
			return rep, err
		}
	}
	consumed := time.Now()
	stop()
	if err := <-done; err != nil {
		return rep, err
	}
	elapsed := time.Since(start)
	rep.Drain = time.Since(consumed).Seconds()
	rep.CPUSeconds = (cpuTime() - cpuStart).Seconds()
	rep.PeakRSS = peakRSS()
	rep.Stats = sink.Stats().Snapshot()
	rep.Memory = sink.Memory()
	if rep.Stats.RecordsUploaded != int64(o.Records) {
		msg := fmt.Sprintf("%d records uploaded, want %d (%d rejected, %d uploads failed, %d S3 requests retried)",
			rep.Stats.RecordsUploaded, o.Records, rep.Stats.Rejected, rep.Stats.UploadErrors, rep.Stats.S3Retries)
		if rep.Stats.UploadErrors > 0 {
			msg += "; `pqsink bench --verbose` shows the sink's log"
		}
		return rep, errors.New(msg)
	}
	if o.Table != "" && (rep.Stats.TablePendingRecords != 0 || rep.Stats.TableCommitErrors != 0) {
		return rep, fmt.Errorf("%d records uploaded but not in the table (%d table commits failed)", rep.Stats.TablePendingRecords, rep.Stats.TableCommitErrors)
	}
	rep.Records = rep.Stats.RecordsUploaded
	rep.Seconds = elapsed.Seconds()
	rep.RecordsPerSec = float64(rep.Records) / rep.Seconds
	rep.InputMBPerSec = float64(rep.InputBytes) / 1e6 / rep.Seconds
	rep.Files = sumFiles(rep.Stats.Files)
	rep.OutputBytes = rep.Stats.BytesUploaded
	rep.BytesPerRecord = float64(rep.OutputBytes) / float64(rep.Records)
	return rep, nil
}

func sumFiles(m map[string]int64) int64 {
	var n int64
	for _, v := range m {
		n += v
	}
	return n
}

// sinkConfig renders the sink's configuration and parses it as `pqsink
// run` would.
func sinkConfig(o Options, brokers []string, storeURL, dir string) (*config.Config, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "kafka:\n  brokers: [%s]\n  group: pqsink-bench-%d\n  topics: [%s]\n  start: earliest\n", strings.Join(brokers, ", "), time.Now().UnixNano(), o.Topic)
	fmt.Fprintf(&b, "store:\n  url: %q\n%s", storeURL, o.StoreExtra)
	fmt.Fprintf(&b, "format:\n  type: %s\n", o.Format)
	if keys := workloads[o.Format].formatKeys; keys != nil {
		if err := keys(&b, o, dir); err != nil {
			return nil, err
		}
	}
	fmt.Fprintf(&b, "envelope: %v\n", o.Envelope)
	if o.Table == "" {
		fmt.Fprintf(&b, "path: %q\n", o.Path)
	} else {
		uri := o.Table
		if uri == "sqlite" {
			uri = "sqlite://" + filepath.Join(dir, "catalog.db")
		}
		// A namespace of the run's own: a catalog that outlives the run
		// keeps the tables of earlier runs, whose files are gone.
		ns := "bench"
		if o.Table != "sqlite" {
			ns = fmt.Sprintf("bench_%d", time.Now().UnixNano())
		}
		fmt.Fprintf(&b, "table:\n  format: iceberg\n  catalog: {type: sql, uri: %q}\n  namespace: %s\n  commit_interval: %s\n  partition_by: [\"day(_kafka.timestamp)\"]\n", uri, ns, o.CommitInterval)
	}
	fmt.Fprintf(&b, "parquet:\n  codec: %s\n", o.Codec)
	if o.Memory != "" {
		fmt.Fprintf(&b, "memory:\n  limit: %s\n", o.Memory)
	}
	if o.RotateInterval > 0 {
		fmt.Fprintf(&b, "rotate:\n  interval: %s\n", o.RotateInterval)
	}
	if o.RecordBytes > 0 {
		fmt.Fprintf(&b, "max_record_bytes: %d\n", o.RecordBytes)
	}
	b.WriteString(o.Extra)
	return config.Parse([]byte(b.String()), os.LookupEnv)
}

// StartBroker starts an in-process Kafka broker on a loopback port with
// one topic, taking records of up to recordBytes (0: Kafka's default).
func StartBroker(partitions int, topic string, recordBytes int64) (*kfake.Cluster, error) {
	opts := []kfake.Opt{kfake.NumBrokers(1), kfake.Ports(0), kfake.SeedTopics(int32(partitions), topic)}
	if recordBytes > 0 {
		opts = append(opts, kfake.BrokerConfigs(map[string]string{"message.max.bytes": strconv.FormatInt(batchMaxBytes(recordBytes), 10)}))
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		return nil, fmt.Errorf("starting the in-process broker: %w", err)
	}
	return c, nil
}

// batchMaxBytes is the largest record batch the producer sends and the
// broker takes: under the brokers' default max.message.bytes, or room for
// one record of recordBytes.
func batchMaxBytes(recordBytes int64) int64 {
	return max(900<<10, recordBytes+64<<10)
}

// Load produces n reference events to topic, spread round-robin over its
// partitions so that every partition gets its share even when there are
// thousands, and returns the bytes of the values. Each event is padded to
// recordBytes (0: not padded). It uses franz-go's producer, which sends
// one request per broker for all partitions; the sink itself consumes with
// kafka-go.
func Load(ctx context.Context, brokers []string, topic string, n int, recordBytes int64) (int64, error) {
	return LoadFormat(ctx, brokers, topic, "json", n, recordBytes)
}

// LoadFormat is Load with the events in format: as JSON (json, variant)
// or as Protobuf messages of events.ProtoSchema (protobuf), the padding
// applied to the JSON before it is encoded.
func LoadFormat(ctx context.Context, brokers []string, topic, format string, n int, recordBytes int64) (int64, error) {
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(brokers...),
		kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()),
		kgo.ProducerBatchCompression(kgo.Lz4Compression()),
		kgo.RequiredAcks(kgo.LeaderAck()),
		kgo.DisableIdempotentWrite(),
		kgo.ProducerBatchMaxBytes(int32(batchMaxBytes(recordBytes))),
		kgo.MaxBufferedRecords(200_000),
		kgo.MaxBufferedBytes(max(256<<20, int(2*recordBytes))),
		kgo.ProducerLinger(5*time.Millisecond),
	)
	if err != nil {
		return 0, fmt.Errorf("producing: %w", err)
	}
	defer cl.Close()
	encode := workloads[format].encode
	gen := events.New(1, time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC))
	pr := rand.New(rand.NewPCG(2, 0x5eed))
	var total int64
	var first atomic.Pointer[error]
	done := func(_ *kgo.Record, err error) {
		if err != nil {
			first.CompareAndSwap(nil, &err)
		}
	}
	for i := range n {
		if first.Load() != nil {
			break
		}
		v := gen.Append(nil)
		if recordBytes > 0 {
			v = pad(v, int(recordBytes), pr)
		}
		if encode != nil {
			var err error
			if v, err = encode(v); err != nil {
				return total, err
			}
		}
		total += int64(len(v))
		cl.Produce(ctx, &kgo.Record{Key: strconv.AppendInt(nil, int64(i%10007), 10), Value: v}, done)
	}
	if err := cl.Flush(ctx); err != nil {
		return total, fmt.Errorf("producing: %w", err)
	}
	if err := first.Load(); err != nil {
		return total, fmt.Errorf("producing: %w", *err)
	}
	return total, nil
}

// pad lengthens an event's user name with random letters until the event
// is size bytes long (an event already as long is left as it is).
func pad(event []byte, size int, r *rand.Rand) []byte {
	at := bytes.Index(event, []byte(`"user":"`))
	n := size - len(event)
	if at < 0 || n <= 0 {
		return event
	}
	at += len(`"user":"`)
	out := make([]byte, 0, size)
	out = append(out, event[:at]...)
	for range n {
		out = append(out, byte('a'+r.IntN(26)))
	}
	return append(out, event[at:]...)
}

// ServeBroker is the child broker process: it starts a broker, loads the
// events, prints "ready ADDR BYTES" on out, and runs until in closes.
func ServeBroker(ctx context.Context, args []string, in io.Reader, out io.Writer) error {
	if len(args) != 4 && len(args) != 5 {
		return fmt.Errorf("want TOPIC PARTITIONS RECORDS RECORD_BYTES [FORMAT], got %q", args)
	}
	format := "json"
	if len(args) == 5 {
		format = args[4]
	}
	partitions, err1 := strconv.Atoi(args[1])
	records, err2 := strconv.Atoi(args[2])
	recordBytes, err3 := strconv.ParseInt(args[3], 10, 64)
	if err := errors.Join(err1, err2, err3); err != nil {
		return err
	}
	c, err := StartBroker(partitions, args[0], recordBytes)
	if err != nil {
		return err
	}
	defer c.Close()
	n, err := LoadFormat(ctx, c.ListenAddrs(), args[0], format, records, recordBytes)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "ready %s %d\n", c.ListenAddrs()[0], n)
	io.Copy(io.Discard, in)
	return nil
}

type childBroker struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
}

func (c *childBroker) stop() {
	c.stdin.Close()
	done := make(chan struct{})
	go func() { c.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		c.cmd.Process.Kill()
		<-done
	}
}

func startChildBroker(ctx context.Context, o Options) (*childBroker, string, int64, error) {
	argv := o.BrokerCommand
	if len(argv) == 0 {
		exe, err := os.Executable()
		if err != nil {
			return nil, "", 0, err
		}
		argv = []string{exe, "__broker"}
	}
	argv = append(argv[:len(argv):len(argv)], o.Topic, strconv.Itoa(o.Partitions), strconv.Itoa(o.Records), strconv.FormatInt(o.RecordBytes, 10))
	if workloads[o.Format].encode != nil {
		// The child loads JSON unless told the format.
		argv = append(argv, o.Format)
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = childEnv(os.Environ())
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, "", 0, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, "", 0, err
	}
	if err := cmd.Start(); err != nil {
		return nil, "", 0, fmt.Errorf("starting the broker process: %w", err)
	}
	child := &childBroker{cmd: cmd, stdin: stdin}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	var addr string
	var n int64
	if err == nil {
		_, err = fmt.Sscanf(line, "ready %s %d", &addr, &n)
	}
	if err != nil {
		child.stop()
		if ctx.Err() != nil {
			// Interrupted: the broker process stopped with it, and what
			// it said is not the cause.
			return nil, "", 0, fmt.Errorf("loading the events into the broker: %w", context.Cause(ctx))
		}
		return nil, "", 0, fmt.Errorf("broker process: %q: %w", line, err)
	}
	return child, addr, n, nil
}

// resetPeakRSS starts the peak RSS anew (Linux: /proc/self/clear_refs), so
// that what the load phase used does not count.
func resetPeakRSS() {
	os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
}

// peakRSS returns the process's peak resident set size in bytes since the
// last reset (VmHWM), or getrusage's maximum where /proc is missing.
func peakRSS() int64 {
	if n := memlimit.ProcBytes("/proc/self/status", "VmHWM"); n > 0 {
		return n
	}
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		return ru.Maxrss << 10
	}
	return 0
}

// cpuTime is the user and system time this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// writeHeapProfile writes the live heap to path (PQSINK_HEAPPROFILE).
func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("PQSINK_HEAPPROFILE: %w", err)
	}
	runtime.GC()
	if err := pprof.WriteHeapProfile(f); err != nil {
		f.Close()
		return fmt.Errorf("PQSINK_HEAPPROFILE: %w", err)
	}
	return f.Close()
}

// childEnv is the broker process's environment: the parent's without its
// profile files, which the child would otherwise write over the parent's
// (the broker is not what a profile of the benchmark measures).
func childEnv(environ []string) []string {
	return slices.DeleteFunc(slices.Clone(environ), func(kv string) bool {
		return strings.HasPrefix(kv, "PQSINK_CPUPROFILE=") || strings.HasPrefix(kv, "PQSINK_MEMPROFILE=")
	})
}
