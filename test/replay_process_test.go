package test

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pqsink/pqsink/connector/source"
	"github.com/pqsink/pqsink/internal/testutil"
)

// TestReplayProcessSignals runs `pqsink replay` as a child process and
// stops it with a signal: SIGTERM flushes, writes the checkpoint and exits
// 1 with a message that says so, the target holding exactly what the
// checkpoint counts; SIGKILL leaves the last checkpoint written. Either
// way a rerun with the checkpoint completes the replay with nothing
// missing, and after SIGTERM nothing twice.
func TestReplayProcessSignals(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		t.Run(sig.String(), func(t *testing.T) {
			const partitions, n = 3, 30000
			topic, target := "proc-src", "proc-dst"
			a := archiveTopic(t, "g-proc", topic, []string{target}, partitions, n, 5000)
			brokers, truth, text := a.brokers, a.truth, a.text

			work := t.TempDir()
			cfgPath := filepath.Join(work, "replay.yaml")
			if err := os.WriteFile(cfgPath, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
			checkpoint := filepath.Join(work, "replay.checkpoint")
			args := []string{"replay", "--config", cfgPath, "--from", a.storeURL, "--topic", target,
				"--checkpoint", checkpoint, "--batch", "200", "--progress", "log"}

			// First run, stopped by the signal once some records are out.
			log := &testutil.Tail{Max: 256 << 10}
			cmd := exec.Command(pqsinkBinary(t), args...)
			cmd.Stdout, cmd.Stderr = log, log
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			deadline := time.Now().Add(time.Minute)
			for !strings.Contains(log.String(), "replay planned") && time.Now().Before(deadline) {
				time.Sleep(5 * time.Millisecond)
			}
			time.Sleep(30 * time.Millisecond)
			cmd.Process.Signal(sig)
			var runErr error
			select {
			case runErr = <-done:
			case <-time.After(time.Minute):
				cmd.Process.Kill()
				t.Fatalf("pqsink replay did not exit within a minute of %v\n%s", sig, log.String())
			}
			var exit *exec.ExitError
			finished := runErr == nil
			switch {
			case finished:
				t.Logf("the replay finished before %v arrived; only the rerun is checked", sig)
			case sig == syscall.SIGTERM && (!errors.As(runErr, &exit) || exit.ExitCode() != 1 || !strings.Contains(log.String(), "replay interrupted")):
				t.Fatalf("after SIGTERM: %v, want exit status 1 and \"replay interrupted\"\n%s", runErr, log.String())
			}
			produced := len(readTopic(t, brokers, target, partitions))
			if sig == syscall.SIGTERM && !finished {
				data, err := os.ReadFile(checkpoint)
				if err != nil {
					t.Fatalf("no checkpoint after SIGTERM: %v\n%s", err, log.String())
				}
				var ck source.Checkpoint
				if err := json.Unmarshal(data, &ck); err != nil {
					t.Fatal(err)
				}
				if ck.Records != int64(produced) || ck.Complete {
					t.Errorf("after SIGTERM the target holds %d records, the checkpoint counts %d (complete %v)", produced, ck.Records, ck.Complete)
				}
			}

			// The rerun completes the replay.
			out, err := exec.Command(pqsinkBinary(t), args...).CombinedOutput()
			if err != nil {
				t.Fatalf("rerun: %v\n%s", err, out)
			}
			got := readTopic(t, brokers, target, partitions)
			if sig == syscall.SIGTERM || finished {
				compareReplayed(t, truth, got, 0)
				return
			}
			// After SIGKILL, records past the last checkpoint write come
			// twice; each partition must still hold every source record, in
			// order, after its duplicates.
			if len(got) < n {
				t.Errorf("after SIGKILL and a rerun the target holds %d records, want at least %d", len(got), n)
			}
			want, have := byPartition(truth), byPartition(got)
			for p, ws := range want {
				hs := have[p]
				if len(hs) < len(ws) {
					t.Errorf("partition %d: %d records, want at least %d", p, len(hs), len(ws))
					continue
				}
				// The rerun's records are the last len(ws)-k of the source
				// for some k: the tail must match the source's tail.
				tail := hs[len(hs)-len(ws):]
				if !jsonEqualBytes(tail[len(tail)-1].Value, ws[len(ws)-1].Value) {
					t.Errorf("partition %d: the last record differs from the source's", p)
				}
				seen := map[string]bool{}
				for _, h := range hs {
					seen[string(canonicalJSON(t, h.Value))] = true
				}
				for _, w := range ws {
					if !seen[string(canonicalJSON(t, w.Value))] {
						t.Errorf("partition %d: source offset %d missing", p, w.Offset)
						break
					}
				}
			}
		})
	}
}

// canonicalJSON re-encodes a JSON value with sorted keys.
func canonicalJSON(t *testing.T, b []byte) []byte {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return b
	}
	out, err := json.Marshal(v)
	if err != nil {
		return b
	}
	return out
}
