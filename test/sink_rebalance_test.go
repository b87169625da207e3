package test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/pqsink/pqsink/internal/testutil/duckdb"
	kafkatest "github.com/pqsink/pqsink/internal/testutil/kafka"
	"github.com/pqsink/pqsink/objstore"
)

// rebalanceGroup is a group of `pqsink run` processes over one topic with
// long rotation (10 minutes): files land only when a partition is handed
// over or a member stops, so every record read twice is one that a
// rebalance made a member read again.
type rebalanceGroup struct {
	t       *testing.T
	broker  *kafkatest.Cluster
	topic   string
	dir     string
	text    string
	members []*sinkProcess // running now
	all     []*sinkProcess // every process started, for their counts
	killed  int64          // records consumed by SIGKILLed processes (scraped before the kill)
}

func newRebalanceGroup(t *testing.T, topic string, partitions int32, session string) *rebalanceGroup {
	broker := kafkatest.StartWith(t, []kfake.Opt{kfake.GroupMinSessionTimeout(500 * time.Millisecond)}, partitions, topic)
	g := &rebalanceGroup{t: t, broker: broker, topic: topic, dir: t.TempDir()}
	cfg := sinkConfig{
		brokers: broker.Brokers, group: topic, topic: topic, storeURL: "file://" + g.dir,
		format: "json", envelope: true, records: 10_000_000, interval: "10m",
		extra: "metrics:\n  listen: 127.0.0.1:0\n",
	}
	g.text = cfg.yaml(t)
	g.text = replaceLine(g.text, "  session_timeout: 6s", "  session_timeout: "+session)
	g.text = replaceLine(g.text, "  heartbeat_interval: 500ms", "  heartbeat_interval: 200ms")
	return g
}

// start starts a member.
func (g *rebalanceGroup) start(name string) *sinkProcess { return g.startWith(name, g.text) }

// startStatic starts a static member with the instance id.
func (g *rebalanceGroup) startStatic(name, id string) *sinkProcess {
	return g.startWith(name, replaceLine(g.text, "  start: earliest", "  start: earliest\n  instance_id: "+id))
}

// startWith starts a member with a configuration text of its own.
func (g *rebalanceGroup) startWith(name, text string) *sinkProcess {
	p := startSinkProcess(g.t, name, text)
	g.members = append(g.members, p)
	g.all = append(g.all, p)
	return p
}

// remove takes p out of the running members.
func (g *rebalanceGroup) remove(p *sinkProcess) {
	for i, q := range g.members {
		if q == p {
			g.members = append(g.members[:i], g.members[i+1:]...)
			return
		}
	}
}

var generationLine = regexp.MustCompile(`msg="generation started" .*? partitions=(\d+) `)

// lastGeneration returns the partitions of p's last generation, -1 before
// its first.
func lastGeneration(p *sinkProcess) int {
	m := generationLine.FindAllStringSubmatch(p.log.String(), -1)
	if len(m) == 0 {
		return -1
	}
	n, _ := strconv.Atoi(m[len(m)-1][1])
	return n
}

// waitBalanced waits until every running member's last generation gives
// it its share of the partitions.
func (g *rebalanceGroup) waitBalanced(partitions int, within time.Duration) {
	g.t.Helper()
	deadline := time.Now().Add(within)
	for {
		ok := true
		for _, p := range g.members {
			n := lastGeneration(p)
			ok = ok && n >= partitions/len(g.members) && n <= (partitions+len(g.members)-1)/len(g.members)
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			var got []int
			for _, p := range g.members {
				got = append(got, lastGeneration(p))
			}
			g.t.Fatalf("the group of %d members is not balanced after %v: partitions %v", len(g.members), within, got)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

var metricsAddr = regexp.MustCompile(`msg="serving metrics" address=(\S+)`)

// consumed scrapes pqsink_records_consumed_total of a running member.
func consumed(t *testing.T, p *sinkProcess) int64 {
	t.Helper()
	m := metricsAddr.FindStringSubmatch(p.log.String())
	if m == nil {
		t.Fatalf("%s: no metrics address in its log", p.name)
	}
	resp, err := http.Get("http://" + m[1] + "/metrics")
	if err != nil {
		t.Fatalf("%s: %v", p.name, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for line := range strings.SplitSeq(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, "pqsink_records_consumed_total "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatal(err)
			}
			return int64(f)
		}
	}
	t.Fatalf("%s: no pqsink_records_consumed_total", p.name)
	return 0
}

// waitConsumed waits until the running members have consumed want records
// between them (since their start).
func (g *rebalanceGroup) waitConsumed(want int64, within time.Duration) {
	g.t.Helper()
	deadline := time.Now().Add(within)
	for {
		var n int64
		for _, p := range g.members {
			n += consumed(g.t, p)
		}
		if n >= want {
			return
		}
		if time.Now().After(deadline) {
			g.t.Fatalf("the members consumed %d records, want %d", n, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// kill SIGKILLs p, after reading what it consumed: the caller makes sure
// no record arrives in between.
func (g *rebalanceGroup) kill(p *sinkProcess) int64 {
	n := consumed(g.t, p)
	p.kill(g.t)
	g.killed += n
	g.remove(p)
	return n
}

// terminate stops p cleanly.
func (g *rebalanceGroup) terminate(p *sinkProcess) {
	p.terminate(g.t, 40*time.Second)
	g.remove(p)
}

// pauses returns the count and mean of pqsink_rebalance_seconds over the
// running members: the time from the start of a rebalance until every
// partition of the member consumes again.
func (g *rebalanceGroup) pauses() (int64, time.Duration) {
	var n int64
	var sum float64
	for _, p := range g.members {
		m := metricsAddr.FindStringSubmatch(p.log.String())
		if m == nil {
			continue
		}
		resp, err := http.Get("http://" + m[1] + "/metrics")
		if err != nil {
			continue
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		for line := range strings.SplitSeq(string(body), "\n") {
			if v, ok := strings.CutPrefix(line, "pqsink_rebalance_seconds_sum "); ok {
				f, _ := strconv.ParseFloat(v, 64)
				sum += f
			}
			if v, ok := strings.CutPrefix(line, "pqsink_rebalance_seconds_count "); ok {
				c, _ := strconv.ParseInt(v, 10, 64)
				n += c
			}
		}
	}
	if n == 0 {
		return 0, 0
	}
	return n, time.Duration(sum / float64(n) * float64(time.Second))
}

var stoppedLine = regexp.MustCompile(`msg="pqsink stopped" .*records_consumed=(\d+)`)

// finish stops every member, lets one last member with short rotation
// land what is left, checks that the store holds every record of the
// topic exactly once, and returns the records read more than once by the
// group: all the records its processes consumed, less the topic's.
func (g *rebalanceGroup) finish(n int) int64 {
	t := g.t
	t.Helper()
	for len(g.members) > 0 {
		g.terminate(g.members[0])
	}
	store, err := objstore.Open(context.Background(), "file://"+g.dir)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	drain := startSinkProcess(t, "drain", replaceLine(g.text, "  interval: 10m", "  interval: 500ms"))
	g.all = append(g.all, drain)
	waitLanded(t, store, int64(n), 60*time.Second)
	drain.waitLog(t, "generation started", 30*time.Second)
	drain.terminate(t, 40*time.Second)
	total := g.killed
	for _, p := range g.all {
		if m := stoppedLine.FindStringSubmatch(p.log.String()); m != nil {
			c, _ := strconv.ParseInt(m[1], 10, 64)
			total += c
		}
	}
	truth := readTopic(t, g.broker.Brokers, g.topic, 12)
	if len(truth) != n {
		t.Fatalf("Kafka holds %d records, want %d", len(truth), n)
	}
	files := download(t, store, t.TempDir())
	checkFileRanges(t, files)
	rows := readWithDuckDB(t, duckdb.Start(t), files, "json", true)
	checkExactlyOnce(t, g.topic, truth, rows, "json", true)
	return total - int64(n)
}

// TestSinkRebalanceRollingRestart restarts each of three members in turn
// (SIGTERM, then started again) while records arrive, with 10-minute
// rotation: the partitions that stay keep their open files, the ones that
// move are handed over finished, so the group reads at most 10% of the
// topic twice (the eager group of earlier releases: about twice the whole
// topic), and the archive is exact.
func TestSinkRebalanceRollingRestart(t *testing.T) {
	const partitions, n = 12, 48000
	g := newRebalanceGroup(t, "rolling", partitions, "6s")
	begin := time.Now()
	producing := produceSlowly(t, g.broker.Brokers, g.topic, n, 24, 12*time.Second)
	for i := range 3 {
		g.start(fmt.Sprintf("sink-%d", i))
	}
	g.waitBalanced(partitions, 30*time.Second)
	for i := range 3 {
		restart := time.Now()
		g.terminate(g.members[0])
		g.start(fmt.Sprintf("sink-%d-again", i))
		g.waitBalanced(partitions, 30*time.Second)
		t.Logf("member %d restarted, group balanced again in %v", i, time.Since(restart).Round(time.Millisecond))
	}
	producing.Wait()
	if n, mean := g.pauses(); n > 0 {
		t.Logf("the members in the group now saw %d generations, %v on average from the start of a rebalance until all their partitions consumed", n, mean.Round(time.Millisecond))
	}
	reread := g.finish(n)
	t.Logf("rolling restart of 3 members over %d partitions, %d records, in %v: %d records read again (%.1f%% of the topic)",
		partitions, n, time.Since(begin).Round(time.Second), reread, 100*float64(reread)/n)
	if reread > n/10 {
		t.Errorf("the group read %d records again, more than 10%% of the %d of the topic", reread, n)
	}
}

// TestSinkRebalanceKill SIGKILLs one member of three: the others keep
// their partitions and open files, and only the killed member's open
// windows are read again, by the members that take its partitions.
func TestSinkRebalanceKill(t *testing.T) {
	const partitions, n = 12, 24000
	g := newRebalanceGroup(t, "killed", partitions, "2s")
	for i := range 3 {
		g.start(fmt.Sprintf("sink-%d", i))
	}
	g.waitBalanced(partitions, 30*time.Second)
	produceEvents(t, g.broker.Brokers, g.topic, 0, n)
	g.waitConsumed(n, 30*time.Second)
	victim := g.members[1]
	open := g.kill(victim)
	g.waitBalanced(partitions, 30*time.Second) // two members, six partitions each
	g.start("sink-1-again")
	g.waitBalanced(partitions, 30*time.Second)
	reread := g.finish(n)
	t.Logf("SIGKILL of a member that had consumed %d records (open windows): %d records read again", open, reread)
	if reread > open || reread == 0 {
		t.Errorf("%d records read again, want at most the %d of the killed member's open windows, and some", reread, open)
	}
}

// TestSinkRebalanceScaleOut adds a fourth member to a running group of
// three while records arrive: each of the three hands over one partition,
// finished, and keeps the others; nothing is read twice.
func TestSinkRebalanceScaleOut(t *testing.T) {
	const partitions, n = 12, 24000
	g := newRebalanceGroup(t, "scaleout", partitions, "6s")
	producing := produceSlowly(t, g.broker.Brokers, g.topic, n, 16, 8*time.Second)
	old := []*sinkProcess{g.start("sink-0"), g.start("sink-1"), g.start("sink-2")}
	g.waitBalanced(partitions, 30*time.Second)
	marks := make([]int, len(old))
	for i, p := range old {
		marks[i] = len(p.log.String())
	}
	added := time.Now()
	g.start("sink-3")
	g.waitBalanced(partitions, 30*time.Second)
	t.Logf("fourth member added, group balanced again in %v", time.Since(added).Round(time.Millisecond))
	handed := 0
	for i, p := range old {
		since := p.log.String()[marks[i]:]
		for _, m := range regexp.MustCompile(`handed_over=(\d+) dropped=(\d+)`).FindAllStringSubmatch(since, -1) {
			h, _ := strconv.Atoi(m[1])
			handed += h
			if m[2] != "0" {
				t.Errorf("%s dropped partitions: %s", p.name, m[0])
			}
		}
	}
	if handed != 3 {
		t.Errorf("the three members handed over %d partitions, want 3 (one each)", handed)
	}
	producing.Wait()
	if n, mean := g.pauses(); n > 0 {
		t.Logf("the members saw %d generations, %v on average from the start of a rebalance until all their partitions consumed", n, mean.Round(time.Millisecond))
	}
	reread := g.finish(n)
	t.Logf("scale-out from 3 to 4 members: %d records read again", reread)
	if reread != 0 {
		t.Errorf("%d records read again, want none", reread)
	}
}

// TestSinkRebalanceZombie freezes a member (SIGSTOP) while a fourth joins
// and the group hands partitions over, past its session timeout, then
// resumes it (SIGCONT): it finds itself out of the group, drops what it
// held, and joins again; the archive stays exact.
func TestSinkRebalanceZombie(t *testing.T) {
	const partitions, n = 12, 24000
	g := newRebalanceGroup(t, "zombie", partitions, "1500ms")
	producing := produceSlowly(t, g.broker.Brokers, g.topic, n, 16, 8*time.Second)
	for i := range 3 {
		g.start(fmt.Sprintf("sink-%d", i))
	}
	g.waitBalanced(partitions, 30*time.Second)
	zombie := g.members[1]
	mark := len(zombie.log.String())
	g.start("sink-3")
	// Frozen as the generation that takes a partition from it starts: its
	// handover has begun and cannot end.
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(zombie.log.String()[mark:], `msg="generation started"`) {
		if time.Now().After(deadline) {
			t.Fatalf("%s saw no new generation after a fourth member started", zombie.name)
		}
		time.Sleep(2 * time.Millisecond)
	}
	zombie.cmd.Process.Signal(syscall.SIGSTOP)
	time.Sleep(3 * time.Second)
	zombie.cmd.Process.Signal(syscall.SIGCONT)
	zombie.waitLog(t, "this member is no longer in the group", 30*time.Second)
	g.waitBalanced(partitions, 30*time.Second)
	producing.Wait()
	reread := g.finish(n)
	t.Logf("a member frozen for 3 s during a handover: %d records read again", reread)
}

// TestSinkRebalanceStatic SIGKILLs a static member (kafka.instance_id)
// and starts it again under the same id within the session timeout: the
// group does not rebalance (the other members see no new generation),
// the member gets its partitions back, and only its open windows are read
// again.
func TestSinkRebalanceStatic(t *testing.T) {
	const partitions, n = 12, 24000
	g := newRebalanceGroup(t, "static", partitions, "6s")
	for i := range 3 {
		g.startStatic(fmt.Sprintf("sink-%d", i), fmt.Sprintf("member-%d", i))
	}
	g.waitBalanced(partitions, 30*time.Second)
	produceEvents(t, g.broker.Brokers, g.topic, 0, n)
	g.waitConsumed(n, 30*time.Second)
	others := []*sinkProcess{g.members[0], g.members[2]}
	before := []int{len(generationLine.FindAllString(others[0].log.String(), -1)), len(generationLine.FindAllString(others[1].log.String(), -1))}
	open := g.kill(g.members[1])
	back := g.startStatic("sink-1-again", "member-1")
	back.waitLog(t, "generation started", 10*time.Second)
	if got := lastGeneration(back); got != 4 {
		t.Errorf("the restarted static member holds %d partitions, want its 4", got)
	}
	time.Sleep(time.Second) // a rebalance would show by now
	for i, p := range others {
		if after := len(generationLine.FindAllString(p.log.String(), -1)); after != before[i] {
			t.Errorf("%s saw %d new generations: the restart rebalanced the group", p.name, after-before[i])
		}
	}
	reread := g.finish(n)
	t.Logf("static member SIGKILLed (%d records in open windows) and back: %d records read again", open, reread)
	if reread > open {
		t.Errorf("%d records read again, want at most the %d of the killed member's open windows", reread, open)
	}
}

// TestSinkRebalanceMixedVersions runs two members beside a member of an
// earlier release, whose eager kafka-go consumer group offers only the
// range and round-robin protocols (it holds its partitions without
// consuming them, as a stand-in). The group runs range while it is there,
// whether it leads the group (it joins first) or a new member does (it
// joins again later): the new members take the range assignment and drop
// what moves, as earlier releases did. Once it leaves, the group is back
// on the cooperative protocol, and the archive is exact.
func TestSinkRebalanceMixedVersions(t *testing.T) {
	const partitions, n = 12, 24000
	g := newRebalanceGroup(t, "mixed", partitions, "6s")
	producing := produceSlowly(t, g.broker.Brokers, g.topic, n, 16, 8*time.Second)
	for _, leads := range []bool{true, false} {
		old, err := kafka.NewConsumerGroup(kafka.ConsumerGroupConfig{
			ID: g.topic, Brokers: g.broker.Brokers, Topics: []string{g.topic},
			HeartbeatInterval: 200 * time.Millisecond, SessionTimeout: 6 * time.Second, RebalanceTimeout: 10 * time.Second,
			JoinGroupBackoff: 100 * time.Millisecond, Timeout: 10 * time.Second,
			// As leader it reads every member's join metadata and refuses
			// what it cannot read whole.
			ErrorLogger: kafka.LoggerFunc(func(msg string, args ...any) {
				t.Errorf("the member of the earlier release: "+msg, args...)
			}),
		})
		if err != nil {
			t.Fatal(err)
		}
		held := make(chan int, 16)
		go func() {
			for {
				gen, err := old.Next(context.Background())
				if errors.Is(err, kafka.ErrGroupClosed) {
					return
				} else if err != nil {
					continue
				}
				held <- len(gen.Assignments[g.topic])
				gen.Start(func(ctx context.Context) { <-ctx.Done() })
			}
		}()
		var marks []int
		if leads {
			select {
			case got := <-held:
				if got != partitions {
					t.Errorf("the member of the earlier release, alone, holds %d partitions", got)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("the member of the earlier release got no generation")
			}
			g.start("sink-0")
			g.start("sink-1")
		} else {
			for _, p := range g.members {
				marks = append(marks, len(p.log.String()))
			}
		}
		for i, p := range g.members {
			since := 0
			if marks != nil {
				since = marks[i]
			}
			waitLogSince(t, p, since, "protocol=range partitions=4", 30*time.Second)
		}
		t.Logf("with a member of the earlier release (leading the group: %v), the group runs range, 4 partitions each", leads)
		time.Sleep(time.Second)
		marks = marks[:0]
		for _, p := range g.members {
			marks = append(marks, len(p.log.String()))
		}
		old.Close()
		for i, p := range g.members {
			waitLogSince(t, p, marks[i], "protocol=pqsink-cooperative-sticky partitions=6", 30*time.Second)
		}
	}
	producing.Wait()
	reread := g.finish(n)
	t.Logf("with a member of the earlier release twice for a while: %d records read again", reread)
}

// waitLogSince waits until p has logged s after the first since bytes of
// its log.
func waitLogSince(t *testing.T, p *sinkProcess, since int, s string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !strings.Contains(p.log.String()[since:], s) {
		if time.Now().After(deadline) {
			t.Fatalf("%s did not log %q within %v", p.name, s, within)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestSinkRebalanceTable adds a fourth member to a group of three that
// commit to an Iceberg table (SQLite catalog) with 10-minute rotation and
// a 10-minute table.commit_interval: files reach the table only at a
// handover or a shutdown. The partitions handed over are in the table
// before their new owner starts from the table's state, so nothing is
// read twice, and the table holds every record once.
func TestSinkRebalanceTable(t *testing.T) {
	const partitions, n = 12, 12000
	env := newTableEnv(t, "tablerebalance")
	broker := kafkatest.StartWith(t, []kfake.Opt{kfake.GroupMinSessionTimeout(500 * time.Millisecond)}, partitions, env.topic)
	text := env.config(t, broker.Brokers, "tablerebalance", "10m", 10_000_000)
	text = replaceLine(text, "  interval: 500ms", "  interval: 10m")
	text = replaceLine(text, "  heartbeat_interval: 500ms", "  heartbeat_interval: 200ms")
	text += "metrics:\n  listen: 127.0.0.1:0\n"
	g := &rebalanceGroup{t: t, broker: broker, topic: env.topic, text: text}
	producing := produceSlowly(t, broker.Brokers, env.topic, n, 12, 6*time.Second)
	for i := range 3 {
		g.start(fmt.Sprintf("sink-%d", i))
	}
	g.waitBalanced(partitions, 30*time.Second)
	g.start("sink-3")
	g.waitBalanced(partitions, 30*time.Second)
	producing.Wait()
	g.waitConsumed(n, 30*time.Second)
	for len(g.members) > 0 {
		g.terminate(g.members[0])
	}
	env.waitRows(t, n, 30*time.Second)
	var total int64
	for _, p := range g.all {
		if m := stoppedLine.FindStringSubmatch(p.log.String()); m != nil {
			c, _ := strconv.ParseInt(m[1], 10, 64)
			total += c
		}
	}
	env.check(t, readTopic(t, broker.Brokers, env.topic, partitions))
	t.Logf("scale-out from 3 to 4 members committing to a table: %d records read again", total-n)
	if total != n {
		t.Errorf("the members consumed %d records, want each of the %d once", total, n)
	}
}
