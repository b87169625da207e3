package test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/pqsink/pqsink/internal/testutil/duckdb"
	kafkatest "github.com/pqsink/pqsink/internal/testutil/kafka"
)

// sinkProcess is `pqsink run` in a child process.
type sinkProcess struct {
	name string
	cmd  *exec.Cmd
	log  *processLog
	done chan error
}

// processLog keeps all that a child process writes: a test looks for a
// line (a generation started, a spec changed) however many followed it,
// which a bounded tail loses once a process logs a few thousand uploads.
type processLog struct {
	mu  sync.Mutex
	buf []byte
}

// Write keeps p. It never fails.
func (l *processLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	return len(p), nil
}

// String returns all that was written, without surrounding white space.
func (l *processLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.TrimSpace(string(l.buf))
}

// Contains says whether s was written, without copying the log.
func (l *processLog) Contains(s string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return bytes.Contains(l.buf, []byte(s))
}

// tail returns the last n bytes written, for a failure's output.
func (l *processLog) tail(n int) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.TrimSpace(string(l.buf[max(0, len(l.buf)-n):]))
}

// startSinkProcess runs the pqsink binary with the configuration text.
func startSinkProcess(t *testing.T, name, cfgText string) *sinkProcess {
	t.Helper()
	cfgPath := filepath.Join(t.TempDir(), name+".yaml")
	if err := os.WriteFile(cfgPath, []byte(cfgText), 0o644); err != nil {
		t.Fatal(err)
	}
	return runSinkProcess(t, name, cfgPath)
}

// runSinkProcess runs `pqsink run --config cfgPath`.
func runSinkProcess(t *testing.T, name, cfgPath string) *sinkProcess {
	t.Helper()
	p := &sinkProcess{name: name, log: &processLog{}, done: make(chan error, 1)}
	p.cmd = exec.Command(pqsinkBinary(t), "run", "--config", cfgPath)
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.done <- p.cmd.Wait() }()
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		<-p.done
		if t.Failed() {
			t.Logf("--- %s log (tail) ---\n%s", name, p.log.tail(512<<10))
		}
	})
	return p
}

// waitLog waits until the process has logged a line containing s.
func (p *sinkProcess) waitLog(t *testing.T, s string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !p.log.Contains(s) {
		if time.Now().After(deadline) {
			t.Fatalf("%s did not log %q within %v", p.name, s, within)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// kill ends the process with SIGKILL: no clean-up of any kind.
func (p *sinkProcess) kill(t *testing.T) {
	t.Helper()
	p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
	p.done <- nil // for the cleanup's receive
}

// terminate sends SIGTERM and waits for a clean exit.
func (p *sinkProcess) terminate(t *testing.T, within time.Duration) {
	t.Helper()
	// A SIGTERM in the first two milliseconds, before package
	// earlysignal asks for it, ends the process as the default action
	// does, before it has done anything: that is a SIGKILL, which the
	// tests exercise on their own (TestSignalDuringInit sends one later
	// in the start-up). Wait for its first line, which main logs after
	// its handler.
	for deadline := time.Now().Add(10 * time.Second); !p.log.Contains("pqsink starting") && time.Now().Before(deadline); {
		select {
		case err := <-p.done:
			p.done <- err
			t.Errorf("%s exited before SIGTERM: %v\n%s", p.name, err, p.log.String())
			return
		case <-time.After(5 * time.Millisecond):
		}
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-p.done:
		p.done <- err
		if err != nil {
			t.Errorf("%s: exit after SIGTERM: %v\n%s", p.name, err, p.log.String())
		}
	case <-time.After(within):
		t.Errorf("%s did not exit within %v of SIGTERM", p.name, within)
	}
}

// produceSlowly produces n events in chunks over about d, in the background.
// A test that fails before waiting for it still waits (Cleanup): the
// producer reports through t, which must not outlive the test.
func produceSlowly(t *testing.T, brokers []string, topic string, n, chunks int, d time.Duration) *sync.WaitGroup {
	var wg sync.WaitGroup
	wg.Add(1)
	t.Cleanup(wg.Wait)
	go func() {
		defer wg.Done()
		per := n / chunks
		for i := range chunks {
			produceEvents(t, brokers, topic, i*per, per)
			time.Sleep(d / time.Duration(chunks))
		}
	}()
	return &wg
}

// crashLoopKills is how many times TestSinkCrashLoop kills the sink on a
// store: twelve on a directory; six on each emulator, which keeps each of
// their runs under a minute and still kills uploads in flight at every
// stage (the kill times are random, and files rotate every 300 ms).
func crashLoopKills(kind string) int {
	if kind == "file" {
		return 12
	}
	return 6
}

// TestSinkCrashLoop kills the sink with SIGKILL at random moments while
// records arrive and files rotate by wall-clock age many times a second;
// after a last clean run every record is in the output exactly once. It
// runs on each of storeKinds, with the dead letters in the same store.
func TestSinkCrashLoop(t *testing.T) {
	for _, kind := range storeKinds() {
		t.Run(kind, func(t *testing.T) { testSinkCrashLoop(t, newStoreTarget(t, kind, "crash"), crashLoopKills(kind)) })
	}
}

func testSinkCrashLoop(t *testing.T, target storeTarget, kills int) {
	const partitions, n = 4, 24000
	topic := "crash"
	broker := kafkatest.StartWith(t, []kfake.Opt{kfake.GroupMinSessionTimeout(500 * time.Millisecond)}, partitions, topic)
	dlURL := strings.TrimSuffix(target.url, "crash") + "dead-letters"
	cfg := sinkConfig{
		brokers: broker.Brokers, group: "crash", topic: topic,
		format: "json", envelope: true, records: 3000, interval: "300ms",
		extra: "dead_letter:\n  url: " + dlURL + "\n",
	}
	target.config(&cfg)
	text := cfg.yaml(t)
	text = replaceLine(text, "  session_timeout: 6s", "  session_timeout: 1s")
	text = replaceLine(text, "  heartbeat_interval: 500ms", "  heartbeat_interval: 200ms")
	text = replaceLine(text, "  rebalance_timeout: 10s", "  rebalance_timeout: 3s")

	producing := produceSlowly(t, broker.Brokers, topic, n, 24, 12*time.Second)
	// Poison records among them: their dead letters follow the same
	// exactly-once rules as the files.
	const poisoned = 48
	producing.Add(1)
	go func() {
		defer producing.Done()
		w := &kafka.Writer{Transport: testTransport(t), Addr: kafka.TCP(broker.Brokers...), Topic: topic, Balancer: &kafka.Hash{}, RequiredAcks: kafka.RequireAll, BatchTimeout: time.Millisecond}
		defer w.Close()
		for i := range poisoned {
			m := kafka.Message{Key: []byte(fmt.Sprintf("poison-%d", i)), Value: []byte(fmt.Sprintf(`{"id": %d, "ts": `, i))}
			if err := w.WriteMessages(context.Background(), m); err != nil {
				t.Error(err)
				return
			}
			time.Sleep(250 * time.Millisecond)
		}
	}()
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	for i := range kills {
		p := startSinkProcess(t, fmt.Sprintf("sink-%d", i), text)
		time.Sleep(time.Duration(300+rng.IntN(2200)) * time.Millisecond)
		p.kill(t)
	}
	producing.Wait()
	truth := readTopic(t, broker.Brokers, topic, partitions)
	if len(truth) != n+poisoned {
		t.Fatalf("Kafka holds %d records, want %d", len(truth), n+poisoned)
	}
	poison := map[string]produced{}
	for id, p := range truth {
		if strings.HasPrefix(string(p.Key), "poison-") {
			poison[id] = p
			delete(truth, id)
		}
	}

	last := startSinkProcess(t, "sink-last", text)
	store := target.store(t)
	waitLanded(t, store, n, 3*time.Minute)
	last.waitLog(t, "generation started", time.Minute)
	last.terminate(t, 30*time.Second)

	files := download(t, store, t.TempDir())
	checkFileRanges(t, files)
	db := duckdb.Start(t)
	rows := readWithDuckDB(t, db, files, "json", true)
	checkExactlyOnce(t, topic, truth, rows, "json", true)
	letters := readLetters(t, target.open(t, dlURL)) // fails on a letter in two objects
	for id, p := range poison {
		if l, ok := letters[id]; !ok || string(l.Value) != string(p.Value) || string(l.Key) != string(p.Key) {
			t.Errorf("poison record %s (%s): dead letter %+v", id, p.Key, l)
		}
	}
	if len(letters) != len(poison) {
		t.Errorf("%d dead letters, want %d", len(letters), len(poison))
	}
	t.Logf("%s: %d kills, %d files, %d dead letters", target.url, kills, len(files), len(letters))
}

// TestSinkGroupMembership runs two sink processes in one group, adds a
// third and stops one while records arrive: every record exactly once.
// Partitions move while files are open, so a member that has lost a
// partition and one that has gained it can upload the same key at once:
// the store's create-if-absent decides. It runs on each of storeKinds.
func TestSinkGroupMembership(t *testing.T) {
	for _, kind := range storeKinds() {
		t.Run(kind, func(t *testing.T) { testSinkGroupMembership(t, newStoreTarget(t, kind, "members")) })
	}
}

func testSinkGroupMembership(t *testing.T, target storeTarget) {
	const partitions, n = 6, 30000
	topic := "members"
	broker := kafkatest.StartWith(t, []kfake.Opt{kfake.GroupMinSessionTimeout(500 * time.Millisecond)}, partitions, topic)
	cfg := sinkConfig{
		brokers: broker.Brokers, group: "members", topic: topic,
		format: "variant", shred: "auto", envelope: true, records: 2000, interval: "500ms",
	}
	target.config(&cfg)
	text := cfg.yaml(t)
	text = replaceLine(text, "  session_timeout: 6s", "  session_timeout: 2s")
	text = replaceLine(text, "  heartbeat_interval: 500ms", "  heartbeat_interval: 300ms")

	producing := produceSlowly(t, broker.Brokers, topic, n, 30, 15*time.Second)
	a := startSinkProcess(t, "sink-a", text)
	b := startSinkProcess(t, "sink-b", text)
	time.Sleep(4 * time.Second)
	c := startSinkProcess(t, "sink-c", text)
	time.Sleep(4 * time.Second)
	a.waitLog(t, "generation started", time.Minute)
	a.terminate(t, 30*time.Second)
	producing.Wait()
	truth := readTopic(t, broker.Brokers, topic, partitions)

	store := target.store(t)
	waitLanded(t, store, n, 3*time.Minute)
	for _, p := range []*sinkProcess{a, b, c} {
		p.waitLog(t, "generation started", time.Minute)
	}
	b.terminate(t, 30*time.Second)
	c.terminate(t, 30*time.Second)

	files := download(t, store, t.TempDir())
	checkFileRanges(t, files)
	db := duckdb.Start(t)
	rows := readWithDuckDB(t, db, files, "variant", true)
	checkExactlyOnce(t, topic, truth, rows, "variant", true)
}

// replaceLine replaces one exact line of a configuration text.
func replaceLine(text, old, new string) string {
	if !strings.Contains(text, old+"\n") {
		panic("no line " + old)
	}
	return strings.Replace(text, old+"\n", new+"\n", 1)
}
