package test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go/catalog/rest"
	itable "github.com/apache/iceberg-go/table"

	"github.com/pqsink/pqsink/internal/testutil/duckdb"
	"github.com/pqsink/pqsink/internal/testutil/icebergrest"
	kafkatest "github.com/pqsink/pqsink/internal/testutil/kafka"
)

// TestTableSinkRESTRun runs `pqsink run` on a REST catalog (the test's
// own server, internal/testutil/icebergrest, over a SQL catalog), its
// credentials given as ${ENV} references. `pqsink run --check` opens the
// catalog and creates nothing. A run with a token the server refuses
// stops at startup, naming the catalog. A run with OAuth2 client
// credentials uploads files and is killed (SIGKILL) before its first
// table commit; a run with a bearer token adopts those objects and
// commits. Every record is in the table exactly once, read two ways
// through the REST catalog: iceberg-go's scan, and DuckDB over the data
// files the current snapshot lists, which are all the data folder holds,
// each with as many rows as its manifest entry says. No log holds a
// secret, not even the effective configuration logged at debug level.
func TestTableSinkRESTRun(t *testing.T) {
	const partitions, n, group = 3, 3000, "restrun"
	env := newTableEnv(t, "restrun")
	srv := env.restCatalog(t, icebergrest.Options{Warehouse: "analytics"})
	broker := kafkatest.Start(t, partitions, env.topic)
	const badToken = "tok-refused-0815"
	t.Setenv("PQSINK_TEST_REST_CREDENTIAL", icebergrest.ClientID+":"+icebergrest.ClientSecret)
	t.Setenv("PQSINK_TEST_REST_TOKEN", icebergrest.Token)
	t.Setenv("PQSINK_TEST_REST_BAD_TOKEN", badToken)
	config := func(commit, auth string) string {
		text := env.restConfig(t, broker.Brokers, group, "type: rest\n    uri: "+srv.URL+"\n    warehouse: analytics\n    "+auth)
		return replaceLine(text, "  commit_interval: 1s", "  commit_interval: "+commit)
	}
	secrets := []string{icebergrest.ClientSecret, icebergrest.Token, badToken}
	checkNoSecret := func(p *sinkProcess) {
		t.Helper()
		for _, s := range secrets {
			if strings.Contains(p.log.String(), s) {
				t.Errorf("%s logged the secret %q", p.name, s)
			}
		}
	}

	// pqsink run --check opens the catalog and creates nothing.
	checkCfg := filepath.Join(t.TempDir(), "check.yaml")
	if err := os.WriteFile(checkCfg, []byte(config("1s", "token: ${PQSINK_TEST_REST_TOKEN}")), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(pqsinkBinary(t), "run", "--check", "--config", checkCfg).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "is valid") {
		t.Errorf("pqsink run --check: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(strings.TrimPrefix(env.warehouse, "file://"), "kafka", env.topic)); !os.IsNotExist(err) {
		t.Errorf("the check created the table's folder (%v)", err)
	}
	if authed, commits, _ := srv.Counts(); authed == 0 || commits != 0 {
		t.Errorf("pqsink run --check: the server saw %d requests with the token and %d commits; want some and none", authed, commits)
	}

	// A token the server refuses: pqsink run stops at startup.
	refused := startSinkProcess(t, "sink-refused", config("1s", "token: ${PQSINK_TEST_REST_BAD_TOKEN}"))
	select {
	case err := <-refused.done:
		refused.done <- err
		if err == nil {
			t.Errorf("pqsink run with a refused token exited 0:\n%s", refused.log.String())
		}
	case <-time.After(time.Minute):
		t.Fatalf("pqsink run with a refused token still runs after a minute:\n%s", refused.log.String())
	}
	if log := refused.log.String(); !strings.Contains(log, "catalog") || !strings.Contains(log, "no token") {
		t.Errorf("pqsink run with a refused token logged no catalog error with the server's answer:\n%s", log)
	}
	checkNoSecret(refused)
	if _, commits, tokens := srv.Counts(); commits != 0 || tokens != 0 {
		t.Fatalf("after the refused run, the server saw %d commits and issued %d tokens", commits, tokens)
	}

	// Client credentials: files uploaded, killed before any table commit.
	produceEvents(t, broker.Brokers, env.topic, 0, n)
	first := startSinkProcess(t, "sink-uncommitted", config("10m", "credential: ${PQSINK_TEST_REST_CREDENTIAL}"))
	first.waitLog(t, "msg=uploaded", time.Minute)
	time.Sleep(2 * time.Second) // more uploads, no table commit
	if strings.Contains(first.log.String(), "msg=\"table commit\"") {
		t.Fatal("the table was committed before the kill; the test needs it not to be")
	}
	first.kill(t)
	checkNoSecret(first)
	if rows := env.scan(t); len(rows) != 0 {
		t.Fatalf("the table holds %d rows before any commit", len(rows))
	}
	authed, commits, tokens := srv.Counts()
	if authed == 0 || commits != 0 || tokens == 0 {
		t.Errorf("after the credential run, the server saw %d requests with the token and %d commits, and issued %d tokens; want some, none, some", authed, commits, tokens)
	}

	// A bearer token: the objects adopted and committed.
	last := startSinkProcess(t, "sink-after", config("1s", "token: ${PQSINK_TEST_REST_TOKEN}")+"log:\n  level: debug\n")
	last.waitLog(t, "effective configuration", time.Minute)
	last.waitLog(t, "generation started", time.Minute)
	env.waitRows(t, n, 2*time.Minute)
	last.terminate(t, 30*time.Second)
	checkNoSecret(last)
	if !strings.Contains(last.log.String(), "adopted existing object") {
		t.Error("the second run adopted no object: the crash window between upload and table commit was not exercised")
	}
	if authed2, commits2, tokens2 := srv.Counts(); authed2 <= authed || commits2 == 0 || tokens2 != tokens {
		t.Errorf("the token run: %d more requests with the token, %d commits, %d more tokens issued; want some, some, none", authed2-authed, commits2, tokens2-tokens)
	}
	truth := readTopic(t, broker.Brokers, env.topic, partitions)
	env.checkKafkaFollows(t, broker.Brokers, group, partitions)

	// Read back through the REST catalog: iceberg-go's scan.
	ctx := context.Background()
	cat, err := rest.NewCatalog(ctx, "reader", srv.URL, rest.WithOAuthToken(icebergrest.Token), rest.WithWarehouseLocation("analytics"))
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := cat.LoadTable(ctx, itable.Identifier{"kafka", env.topic})
	if err != nil {
		t.Fatalf("loading the table through the REST catalog: %v", err)
	}
	checkTableRows(t, env.rows(t, tbl), truth)
	checkSnapshotFiles(t, env, tbl, truth)
}

// checkSnapshotFiles reads the data files that the current snapshot of
// tbl lists with DuckDB: they are the Parquet files of the env's data
// folder, each holds as many rows as its manifest entry says, and
// together they hold every record of truth exactly once, with its key
// and payload id.
func checkSnapshotFiles(t *testing.T, env *tableEnv, tbl *itable.Table, truth map[string]produced) {
	t.Helper()
	tasks, err := tbl.Scan().PlanFiles(context.Background())
	if err != nil {
		t.Fatalf("planning the table's files: %v", err)
	}
	warehouse := strings.TrimPrefix(env.warehouse, "file://")
	counts := map[string]int64{} // by path
	var listed, quoted []string
	for _, task := range tasks {
		path, ok := strings.CutPrefix(task.File.FilePath(), "file://")
		if !ok {
			t.Fatalf("data file %s is not a file:// URL", task.File.FilePath())
		}
		if _, dup := counts[path]; dup {
			t.Errorf("the snapshot lists %s twice", path)
		}
		counts[path] = task.File.Count()
		listed = append(listed, strings.TrimPrefix(path, warehouse+"/"))
		quoted = append(quoted, duckdb.Quote(path))
	}
	if len(tasks) == 0 {
		t.Fatal("the snapshot lists no data file")
	}
	slices.Sort(listed)
	if folder := env.files(t); !slices.Equal(listed, folder) {
		t.Errorf("the snapshot lists the files\n%q\nthe data folder holds\n%q", listed, folder)
	}

	db := duckdb.Start(t)
	res := db.Query(t, `SELECT filename, "_kafka"."partition" AS p, "_kafka"."offset" AS o, "_kafka"."key" AS k, id
		FROM read_parquet([`+strings.Join(quoted, ", ")+`], filename = true)`)
	perFile := map[string]int64{}
	seen := map[string]bool{}
	for i := range res.Rows {
		perFile[fmt.Sprint(res.Value(i, "filename"))]++
		id := fmt.Sprintf("%v/%v", res.Value(i, "p"), res.Value(i, "o"))
		p, ok := truth[id]
		if !ok {
			t.Errorf("the files hold %s, which Kafka does not", id)
			continue
		}
		if seen[id] {
			t.Errorf("%s is in the files twice", id)
		}
		seen[id] = true
		var key []byte
		if k := res.Value(i, "k"); k != nil {
			if key, err = duckdb.Blob(k); err != nil {
				t.Fatal(err)
			}
		}
		var v struct{ ID int64 }
		if err := json.Unmarshal(p.Value, &v); err != nil {
			t.Fatal(err)
		}
		if string(key) != string(p.Key) || (key == nil) != (p.Key == nil) || fmt.Sprint(res.Value(i, "id")) != fmt.Sprint(v.ID) {
			t.Errorf("%s: the file has key %q id %v, Kafka key %q id %d", id, key, res.Value(i, "id"), p.Key, v.ID)
		}
	}
	if len(seen) != len(truth) {
		t.Errorf("the files hold %d distinct records, Kafka %d", len(seen), len(truth))
	}
	for path, want := range counts {
		if perFile[path] != want {
			t.Errorf("%s: DuckDB reads %d rows, the manifest says %d", path, perFile[path], want)
		}
	}
}
