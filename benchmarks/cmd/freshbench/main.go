// Command freshbench measures how fresh, and how healthy, a table stays
// while the sink runs: records are produced at a steady rate, stamped with
// the time of their production, into an in-process Kafka broker (franz-go's
// kfake, in a child process, so that its memory and CPU are not the
// sink's), and the sink lands them in an Iceberg table with the daemon's
// table maintenance on (table.maintenance at its defaults unless
// -maintenance says otherwise). Every -sample it prints a row:
//
//   - freshness from pqsink's own histogram (pqsink_table_freshness_seconds,
//     scraped from /metrics): p50 and p99 interpolated in the buckets of the
//     files' oldest and newest records together (a record's age lies
//     between the two of its file), and the max as the upper bound of the
//     highest bucket the files' oldest records reached;
//   - freshness from an outside poller, which reads the catalog every
//     -poll with a connection of its own, and for each new snapshot (not a
//     compaction's) reads the _kafka.timestamp of every row of the data
//     files it added: a record's age is the snapshot's commit time minus
//     the record's production time (exact percentiles), and lag is the
//     longest time from a commit to the poll that saw it;
//   - the largest pqsink_table_oldest_uncommitted_seconds seen (read every
//     second);
//   - the table: live data files (iceberg-go's scan planning of the whole
//     table), manifests of the current snapshot, bytes of the metadata
//     file, snapshots, and the time iceberg-go took to plan the scan;
//   - this process's resident memory (now and peak since the sink
//     started) and CPU (of one core, over the interval). The process
//     holds the sink and the poller; the broker and the producer run in
//     the child.
//
// After -duration the producer stops; the run waits until the table holds
// every record produced, prints the last row, and fails when the table
// holds more or fewer rows than were produced.
//
//	go run ./benchmarks/cmd/freshbench -duration 30m
//	go run ./benchmarks/cmd/freshbench -duration 3m -commit-interval 1s -rotate-interval 1s
//	go run ./benchmarks/cmd/freshbench -duration 3m -freshness-target 10s
//	go run ./benchmarks/cmd/freshbench -partitions 1000 -catalog postgres
//
// The warehouse is a local folder (-dir, or a temporary one removed at
// the end); the catalog is SQLite in that folder, a PostgreSQL server the
// run starts (-catalog postgres: initdb and pg_ctl, which
// scripts/provision.sh installs), or the PostgreSQL database of a
// postgres:// URI, in a namespace of the run's own.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	itable "github.com/apache/iceberg-go/table"

	"github.com/pqsink/pqsink/config"
	"github.com/pqsink/pqsink/connector"
	"github.com/pqsink/pqsink/connector/metrics"
	"github.com/pqsink/pqsink/internal/events"
	"github.com/pqsink/pqsink/internal/memlimit"
)

// options are the command's flags.
type options struct {
	duration, sample, poll, drain time.Duration
	rate, partitions              int
	catalog, dir, extra, memory   string
	maintenance                   string
	commitInterval, rotate        time.Duration
	target                        time.Duration
	verbose                       bool
}

func main() {
	if os.Getenv(brokerEnv) != "" {
		if err := brokerMain(os.Args[1:]); err != nil {
			fmt.Fprintln(os.Stderr, "freshbench broker:", err)
			os.Exit(1)
		}
		return
	}
	var o options
	flag.DurationVar(&o.duration, "duration", 30*time.Minute, "how long records are produced")
	flag.DurationVar(&o.sample, "sample", time.Minute, "the interval of the rows printed")
	flag.DurationVar(&o.poll, "poll", 500*time.Millisecond, "how often the outside poller reads the catalog")
	flag.DurationVar(&o.drain, "drain", 10*time.Minute, "how long to wait, once the producer stopped, for the table to hold every record")
	flag.IntVar(&o.rate, "rate", 20_000, "records produced per second")
	flag.IntVar(&o.partitions, "partitions", 12, "partitions of the topic")
	flag.StringVar(&o.catalog, "catalog", "sqlite", "the table's catalog: sqlite (a file in the work folder), postgres (a PostgreSQL server started for the run) or a postgres:// URI")
	flag.StringVar(&o.dir, "dir", "", "work folder: warehouse and SQLite catalog (default: a temporary one, removed at the end)")
	flag.DurationVar(&o.commitInterval, "commit-interval", 0, "table.commit_interval (default: the sink's)")
	flag.DurationVar(&o.rotate, "rotate-interval", 0, "rotate.interval (default: the sink's)")
	flag.DurationVar(&o.target, "freshness-target", 0, "table.freshness_target (default: the sink's, 8s when neither -commit-interval nor -rotate-interval is given)")
	flag.StringVar(&o.memory, "memory", "", "memory.limit, e.g. 512MiB (default: the sink's)")
	flag.StringVar(&o.maintenance, "maintenance", "{}", "table.maintenance, as a YAML flow mapping: {} is every key at its default")
	flag.StringVar(&o.extra, "extra", "", "YAML appended to the sink's configuration: sections other than table")
	flag.BoolVar(&o.verbose, "v", false, "print the sink's log on stderr")
	flag.Parse()
	if o.sample <= 0 || o.poll <= 0 || o.duration <= 0 || o.rate <= 0 || o.partitions <= 0 {
		fmt.Fprintln(os.Stderr, "freshbench: -duration, -sample, -poll, -rate and -partitions must be positive")
		os.Exit(2)
	}
	if o.catalog != "sqlite" && o.catalog != "postgres" && !strings.HasPrefix(o.catalog, "postgres://") && !strings.HasPrefix(o.catalog, "postgresql://") {
		fmt.Fprintf(os.Stderr, "freshbench: -catalog %q: want sqlite, postgres or a postgres:// URI\n", o.catalog)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "freshbench:", err)
		os.Exit(1)
	}
}

const topic = "events"

func run(ctx context.Context, o options, out io.Writer) error {
	dir := o.dir
	if dir == "" {
		d, err := os.MkdirTemp("", "pqsink-freshbench-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	warehouse := "file://" + filepath.Join(dir, "warehouse")
	uri, ns := o.catalog, fmt.Sprintf("bench_%d", time.Now().UnixNano())
	switch uri {
	case "sqlite":
		uri, ns = "sqlite://"+filepath.Join(dir, "catalog.db"), "bench"
	case "postgres":
		pg, err := startPostgres(ctx)
		if err != nil {
			return err
		}
		defer pg.stop()
		uri, ns = pg.uri(), "bench"
	}
	schema := filepath.Join(dir, "events.schema")
	if err := os.WriteFile(schema, []byte(events.Schema), 0o644); err != nil {
		return err
	}

	b, err := startBroker(ctx, topic, o.partitions, o.rate)
	if err != nil {
		return err
	}
	defer b.close()
	cfg, text, err := sinkConfig(o, b.addr, warehouse, uri, ns, schema)
	if err != nil {
		return err
	}
	logOut := io.Writer(os.Stderr)
	if !o.verbose {
		logOut = io.Discard
	}
	log := slog.New(slog.NewTextHandler(logOut, &slog.HandlerOptions{Level: slog.LevelInfo}))

	memlimit.Set(cfg.Memory.Limit) // as `pqsink run` does
	sink, err := connector.New(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer sink.Close()
	addr, stopMetrics, err := metrics.Serve("127.0.0.1:0", sink, log)
	if err != nil {
		return err
	}
	defer stopMetrics()
	os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) // the peak RSS from here on
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- sink.Run(runCtx) }()

	cat, db, err := openCatalog(uri, warehouse)
	if err != nil {
		return err
	}
	defer db.Close()
	ident := itable.Identifier{ns, topic}
	p := &poller{cat: cat, ident: ident}
	go p.run(runCtx, o.poll)

	fmt.Fprintf(out, "freshbench: %d records/s into %d partitions for %s; rows every %s\n", o.rate, o.partitions, o.duration, o.sample)
	fmt.Fprintf(out, "the sink's configuration:\n%s\n", indent(text))
	s := &sampler{addr: addr, table: ns + "." + topic, sink: sink, poller: p, ident: ident, out: out}
	s.start()
	s.header()

	produceEnd := time.Now().Add(o.duration)
	var produced int64 = -1
	var drainEnd time.Time
	second := time.NewTicker(time.Second)
	defer second.Stop()
	nextRow := time.Now().Add(o.sample)
	for {
		select {
		case err := <-done:
			if err == nil {
				err = errors.New("the sink stopped")
			}
			return err
		case <-ctx.Done():
			return ctx.Err()
		case now := <-second.C:
			s.watchGauge()
			if produced < 0 && now.After(produceEnd) {
				if produced, err = b.stopProducing(); err != nil {
					return err
				}
				drainEnd = now.Add(o.drain)
				fmt.Fprintf(out, "-- the producer stopped after %d records (%.0f/s); draining\n", produced, float64(produced)/o.duration.Seconds())
			}
			if produced >= 0 && p.seenRows() >= produced {
				s.row(ctx, "end")
				return s.verify(ctx, produced)
			}
			if produced >= 0 && now.After(drainEnd) {
				s.row(ctx, "end")
				return fmt.Errorf("after %s of draining the poller saw %d of the %d records produced", o.drain, p.seenRows(), produced)
			}
			if now.After(nextRow) {
				nextRow = nextRow.Add(o.sample)
				s.row(ctx, fmt.Sprintf("%.1f", now.Sub(s.t0).Minutes()))
			}
		}
	}
}

// sinkConfig renders the sink's configuration and parses it as `pqsink
// run` would.
func sinkConfig(o options, broker, warehouse, uri, ns, schema string) (*config.Config, string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "kafka:\n  brokers: [%s]\n  group: freshbench-%d\n  topics: [%s]\n  start: earliest\n", broker, time.Now().UnixNano(), topic)
	fmt.Fprintf(&b, "store:\n  url: %q\n", warehouse)
	fmt.Fprintf(&b, "format:\n  type: json\n  schema_file: %s\nenvelope: true\n", schema)
	fmt.Fprintf(&b, "table:\n  format: iceberg\n  catalog: {type: sql, uri: %q}\n  namespace: %s\n  name: \"{topic}\"\n  partition_by: [\"day(_kafka.timestamp)\"]\n", uri, ns)
	if o.commitInterval > 0 {
		fmt.Fprintf(&b, "  commit_interval: %s\n", o.commitInterval)
	}
	if o.target > 0 {
		fmt.Fprintf(&b, "  freshness_target: %s\n", o.target)
	}
	fmt.Fprintf(&b, "  maintenance: %s\n", o.maintenance)
	if o.rotate > 0 {
		fmt.Fprintf(&b, "rotate:\n  interval: %s\n", o.rotate)
	}
	if o.memory != "" {
		fmt.Fprintf(&b, "memory:\n  limit: %s\n", o.memory)
	}
	b.WriteString(o.extra)
	text := b.String()
	cfg, err := config.Parse([]byte(text), os.LookupEnv)
	return cfg, text, err
}

func indent(s string) string {
	return "  " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n  ")
}

// sampler makes the rows.
type sampler struct {
	addr, table string
	sink        *connector.Sink
	poller      *poller
	ident       itable.Identifier
	out         io.Writer

	t0       time.Time
	cpu0     time.Duration
	at       time.Time
	consumed int64
	buckets  map[string]map[float64]float64 // by record (oldest, newest): cumulative count by upper bound
	stale    float64                        // the largest oldest-uncommitted gauge since the last row
}

func (s *sampler) start() {
	s.t0, s.at, s.cpu0 = time.Now(), time.Now(), cpuTime()
	s.buckets = map[string]map[float64]float64{}
}

func (s *sampler) header() {
	fmt.Fprintf(s.out, "%5s %7s | %6s %6s %6s | %6s %6s %6s %5s | %6s | %6s %5s %8s %6s %7s | %6s %6s %5s\n",
		"min", "in/s", "pq p50", "p99", "max", "pl p50", "p99", "max", "lag", "stale", "files", "mfst", "meta KB", "snaps", "plan ms", "RSS", "peak", "CPU%")
}

// watchGauge reads pqsink_table_oldest_uncommitted_seconds.
func (s *sampler) watchGauge() {
	m, err := scrape(s.addr)
	if err != nil {
		return
	}
	for _, sm := range m {
		if sm.name == "pqsink_table_oldest_uncommitted_seconds" && sm.labels["table"] == s.table {
			s.stale = max(s.stale, sm.value)
		}
	}
}

// row prints what the interval since the last row measured.
func (s *sampler) row(ctx context.Context, label string) {
	now := time.Now()
	secs := now.Sub(s.at).Seconds()
	cpu := cpuTime()
	st := s.sink.Stats().Snapshot()
	inRate := float64(st.Consumed-s.consumed) / secs
	s.consumed = st.Consumed

	// pqsink's histogram, over the interval.
	var pq50, pq99, pqMax string = "-", "-", "-"
	if m, err := scrape(s.addr); err == nil {
		cur := map[string]map[float64]float64{}
		for _, sm := range m {
			if sm.name != "pqsink_table_freshness_seconds_bucket" || sm.labels["table"] != s.table {
				continue
			}
			le, err := strconv.ParseFloat(sm.labels["le"], 64)
			if err != nil {
				continue
			}
			rec := sm.labels["record"]
			if cur[rec] == nil {
				cur[rec] = map[float64]float64{}
			}
			cur[rec][le] = sm.value
		}
		both := map[float64]float64{}
		oldest := map[float64]float64{}
		for rec, bs := range cur {
			for le, n := range bs {
				d := n - s.buckets[rec][le]
				both[le] += d
				if rec == "oldest" {
					oldest[le] = d
				}
			}
		}
		s.buckets = cur
		pq50, pq99 = quantileText(both, 0.5), quantileText(both, 0.99)
		pqMax = maxText(oldest)
	}

	// The poller's.
	ages, lag, _, perr := s.poller.take()
	var pl50, pl99, plMax string = "-", "-", "-"
	if len(ages) > 0 {
		slices.Sort(ages)
		pl50 = fmt.Sprintf("%.2f", ages[int(0.5*float64(len(ages)-1))])
		pl99 = fmt.Sprintf("%.2f", ages[int(0.99*float64(len(ages)-1))])
		plMax = fmt.Sprintf("%.2f", ages[len(ages)-1])
	}

	sh, serr := shape(ctx, s.poller.cat, s.ident)
	rss := memlimit.ProcBytes("/proc/self/status", "VmRSS")
	peak := memlimit.ProcBytes("/proc/self/status", "VmHWM")
	fmt.Fprintf(s.out, "%5s %7.0f | %6s %6s %6s | %6s %6s %6s %5.1f | %6.1f | %6d %5d %8.1f %6d %7.1f | %6.0f %6.0f %5.0f\n",
		label, inRate, pq50, pq99, pqMax, pl50, pl99, plMax, lag, s.stale,
		sh.live, sh.manifests, float64(sh.metadataBytes)/1024, sh.snapshots, float64(sh.plan.Microseconds())/1e3,
		float64(rss)/(1<<20), float64(peak)/(1<<20), 100*(cpu-s.cpu0).Seconds()/secs)
	if perr != nil {
		fmt.Fprintln(s.out, "   poller:", perr)
	}
	if serr != nil {
		fmt.Fprintln(s.out, "   table:", serr)
	}
	s.at, s.cpu0, s.stale = now, cpu, 0
}

// verify checks that the table holds every record produced, once.
func (s *sampler) verify(ctx context.Context, produced int64) error {
	sh, err := shape(ctx, s.poller.cat, s.ident)
	if err != nil {
		return err
	}
	st := s.sink.Stats().Snapshot()
	fmt.Fprintf(s.out, "-- %d records produced; the table holds %d, the poller saw %d new; %d table commits, %d failed; peak RSS %.0f MiB, CPU %.1f s in all\n",
		produced, sh.records, s.poller.seenRows(), st.TableCommits, st.TableCommitErrors,
		float64(memlimit.ProcBytes("/proc/self/status", "VmHWM"))/(1<<20), cpuTime().Seconds())
	if sh.records != produced || s.poller.seenRows() != produced {
		return fmt.Errorf("the table holds %d records and the poller saw %d, want the %d produced", sh.records, s.poller.seenRows(), produced)
	}
	return nil
}

// sample is one line of /metrics.
type sample struct {
	name   string
	labels map[string]string
	value  float64
}

// scrape reads the sink's /metrics.
func scrape(addr string) ([]sample, error) {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	var out []sample
	for line := range strings.Lines(string(body)) {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			continue
		}
		sm := sample{name: line[:i], value: v, labels: map[string]string{}}
		if j := strings.IndexByte(line[:i], '{'); j >= 0 {
			sm.name = line[:j]
			for _, kv := range strings.Split(strings.TrimSuffix(line[j+1:i], "}"), ",") {
				k, v, ok := strings.Cut(kv, "=")
				if ok {
					sm.labels[k] = strings.Trim(v, `"`)
				}
			}
		}
		out = append(out, sm)
	}
	return out, nil
}

// quantileText interpolates the q quantile in cumulative buckets (count
// by upper bound), linearly within the bucket; past the last finite
// bound it says ">bound".
func quantileText(cum map[float64]float64, q float64) string {
	bounds := make([]float64, 0, len(cum))
	for le := range cum {
		bounds = append(bounds, le)
	}
	slices.Sort(bounds)
	if len(bounds) == 0 || cum[bounds[len(bounds)-1]] <= 0 {
		return "-"
	}
	total := cum[bounds[len(bounds)-1]]
	want := q * total
	lo, below := 0.0, 0.0
	for _, le := range bounds {
		n := cum[le]
		if n >= want {
			if math.IsInf(le, 1) {
				return fmt.Sprintf(">%.0f", lo)
			}
			if n == below {
				return fmt.Sprintf("%.2f", le)
			}
			return fmt.Sprintf("%.2f", lo+(le-lo)*(want-below)/(n-below))
		}
		lo, below = le, n
	}
	return "-"
}

// maxText is the upper bound of the highest bucket with a count.
func maxText(cum map[float64]float64) string {
	bounds := make([]float64, 0, len(cum))
	for le := range cum {
		bounds = append(bounds, le)
	}
	slices.Sort(bounds)
	prev, lo := 0.0, 0.0
	best := "-"
	for _, le := range bounds {
		if cum[le] > prev {
			if math.IsInf(le, 1) {
				best = fmt.Sprintf(">%.0f", lo)
			} else {
				best = fmt.Sprintf("≤%g", le)
			}
		}
		prev, lo = cum[le], le
	}
	return best
}

// cpuTime is the user and system time this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
