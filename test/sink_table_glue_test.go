package test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/glue"
	itable "github.com/apache/iceberg-go/table"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"

	"github.com/pqsink/pqsink/internal/testutil/gluefake"
	kafkatest "github.com/pqsink/pqsink/internal/testutil/kafka"
)

// The AWS credentials of the Glue tests, given to pqsink through the
// environment (the AWS SDK's default chain), never through its config.
const (
	glueAccessKey = "AKIDPQSINKGLUE"
	glueSecretKey = "pqsink-glue-s3cret"
	glueAccount   = "123456789012"
)

// glueEnv points the AWS SDK's default chain, in this process and the
// pqsink processes it starts, at the test's credentials and region only.
func glueEnv(t *testing.T) {
	none := filepath.Join(t.TempDir(), "none")
	for k, v := range map[string]string{
		"AWS_ACCESS_KEY_ID": glueAccessKey, "AWS_SECRET_ACCESS_KEY": glueSecretKey, "AWS_SESSION_TOKEN": "",
		"AWS_REGION": "eu-west-1", "AWS_DEFAULT_REGION": "", "AWS_PROFILE": "",
		"AWS_CONFIG_FILE": none, "AWS_SHARED_CREDENTIALS_FILE": none,
		"AWS_EC2_METADATA_DISABLED": "true", "AWS_ENDPOINT_URL": "", "AWS_ENDPOINT_URL_GLUE": "",
	} {
		t.Setenv(k, v)
	}
}

// glueTable loads the env's table through iceberg-go's own Glue catalog
// on srv; nil when it does not exist yet.
func glueTable(t *testing.T, env *tableEnv, srv *gluefake.Server) *itable.Table {
	t.Helper()
	ctx := context.Background()
	cfg, err := awsconfig.LoadDefaultConfig(ctx, awsconfig.WithBaseEndpoint(srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	cat, err := glue.NewCatalog(glue.WithAwsConfig(cfg), glue.WithAwsProperties(glue.AwsProperties{glue.CatalogIdKey: glueAccount}))
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := cat.LoadTable(ctx, itable.Identifier{"kafka", env.topic})
	if errors.Is(err, catalog.ErrNoSuchTable) || (err != nil && strings.Contains(err.Error(), "EntityNotFoundException")) {
		return nil
	}
	if err != nil {
		t.Fatalf("loading the table through the Glue catalog: %v", err)
	}
	return tbl
}

// TestTableSinkGlueRun runs `pqsink run` on a Glue catalog (the test's
// own server speaking Glue's JSON protocol, internal/testutil/gluefake),
// with the AWS credentials and region in the environment. `pqsink run
// --check` reads the catalog and creates nothing, and fails with Glue's
// answer when Glue refuses the credentials. A run uploads
// files and is killed (SIGKILL) before its first table commit; a second
// run adopts those objects and commits; a third, started after it stopped,
// commits the records produced in between. Every record is in the table
// exactly once, read two ways through iceberg-go's Glue catalog: its
// scan, and DuckDB over the data files the current snapshot lists. The
// Glue table is what Athena reads: an ICEBERG table of database kafka
// whose metadata_location is the current metadata file. No log holds the
// secret key.
func TestTableSinkGlueRun(t *testing.T) {
	const partitions, n, group = 3, 2000, "gluerun"
	env := newTableEnv(t, "gluerun")
	srv := gluefake.Start(t, gluefake.Options{AccessKeyID: glueAccessKey})
	glueEnv(t)
	broker := kafkatest.Start(t, partitions, env.topic)
	config := func(commit string) string {
		text := env.restConfig(t, broker.Brokers, group, "type: glue\n    endpoint: "+srv.URL+"\n    catalog_id: '"+glueAccount+"'")
		return replaceLine(text, "  commit_interval: 1s", "  commit_interval: "+commit)
	}
	waitRows := func(want int) {
		t.Helper()
		deadline := time.Now().Add(2 * time.Minute)
		for {
			got := 0
			if tbl := glueTable(t, env, srv); tbl != nil {
				got = len(env.rows(t, tbl))
			}
			if got >= want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("the table holds %d rows after 2m, want %d", got, want)
			}
			time.Sleep(300 * time.Millisecond)
		}
	}
	checkNoSecret := func(p *sinkProcess) {
		t.Helper()
		if strings.Contains(p.log.String(), glueSecretKey) {
			t.Errorf("%s logged the AWS secret key", p.name)
		}
	}

	// pqsink run --check reads the catalog and creates nothing; with
	// credentials Glue refuses it fails, with Glue's answer.
	checkCfg := filepath.Join(t.TempDir(), "check.yaml")
	if err := os.WriteFile(checkCfg, []byte(config("1s")), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(pqsinkBinary(t), "run", "--check", "--config", checkCfg).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "is valid") {
		t.Errorf("pqsink run --check: %v\n%s", err, out)
	}
	if _, _, ok := srv.Table("kafka", env.topic); ok || srv.Calls("GetTable") == 0 || srv.Calls("CreateDatabase") != 0 {
		t.Errorf("pqsink run --check: table made %v, %d GetTable and %d CreateDatabase calls; want none, some, none",
			ok, srv.Calls("GetTable"), srv.Calls("CreateDatabase"))
	}
	refused := exec.Command(pqsinkBinary(t), "run", "--check", "--config", checkCfg)
	refused.Env = append(os.Environ(), "AWS_ACCESS_KEY_ID=AKIDSOMEONEELSE")
	out, err = refused.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "AccessDeniedException") || strings.Contains(string(out), glueSecretKey) {
		t.Errorf("pqsink run --check with credentials Glue refuses: %v\n%s", err, out)
	}

	// Files uploaded, killed before any table commit.
	produceEvents(t, broker.Brokers, env.topic, 0, n)
	first := startSinkProcess(t, "sink-uncommitted", config("10m"))
	first.waitLog(t, "msg=uploaded", time.Minute)
	time.Sleep(2 * time.Second) // more uploads, no table commit
	if strings.Contains(first.log.String(), "msg=\"table commit\"") {
		t.Fatal("the table was committed before the kill; the test needs it not to be")
	}
	first.kill(t)
	checkNoSecret(first)
	if tbl := glueTable(t, env, srv); tbl != nil && len(env.rows(t, tbl)) != 0 {
		t.Fatal("the table holds rows before any commit")
	}
	if srv.Calls("GetTable") == 0 || srv.Calls("UpdateTable") != 0 {
		t.Errorf("the first run made %d GetTable and %d UpdateTable calls; want some and none", srv.Calls("GetTable"), srv.Calls("UpdateTable"))
	}

	// The objects adopted and committed.
	second := startSinkProcess(t, "sink-after", config("1s")+"log:\n  level: debug\n")
	second.waitLog(t, "generation started", time.Minute)
	waitRows(n)
	second.terminate(t, 30*time.Second)
	checkNoSecret(second)
	if !strings.Contains(second.log.String(), "adopted existing object") {
		t.Error("the second run adopted no object: the crash window between upload and table commit was not exercised")
	}

	// Stopped and started again: the records produced meanwhile follow.
	produceEvents(t, broker.Brokers, env.topic, n, n)
	third := startSinkProcess(t, "sink-restarted", config("1s"))
	waitRows(2 * n)
	third.terminate(t, 30*time.Second)
	checkNoSecret(third)

	truth := readTopic(t, broker.Brokers, env.topic, partitions)
	tbl := glueTable(t, env, srv)
	if tbl == nil {
		t.Fatal("no table in the Glue catalog")
	}
	env.checkKafkaFollowsTable(t, tbl, broker.Brokers, group, partitions)
	checkTableRows(t, env.rows(t, tbl), truth)
	checkSnapshotFiles(t, env, tbl, truth)

	params, _, ok := srv.Table("kafka", env.topic)
	if !ok || params["table_type"] != "ICEBERG" || params["metadata_location"] != tbl.MetadataLocation() {
		t.Errorf("Glue table kafka.%s: parameters %v (found %v), want table_type ICEBERG and metadata_location %s", env.topic, params, ok, tbl.MetadataLocation())
	}
	if want := env.warehouse + "/kafka/" + env.topic; tbl.Location() != want {
		t.Errorf("table location %s, want %s", tbl.Location(), want)
	}
	if ids := srv.CatalogIDs(); !reflect.DeepEqual(ids, []string{glueAccount}) {
		t.Errorf("the requests named the catalogs %v, want %s", ids, glueAccount)
	}
}
