package test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go/catalog/rest"
	itable "github.com/apache/iceberg-go/table"

	"github.com/pqsink/pqsink/internal/testutil/icebergrest"
	kafkatest "github.com/pqsink/pqsink/internal/testutil/kafka"
)

// sigV4Env points the AWS SDK's default chain, in this process and the
// pqsink processes it starts, at the SigV4 test credentials and region
// eu-west-1 only.
func sigV4Env(t *testing.T) {
	none := filepath.Join(t.TempDir(), "none")
	for k, v := range map[string]string{
		"AWS_ACCESS_KEY_ID": icebergrest.AccessKeyID, "AWS_SECRET_ACCESS_KEY": icebergrest.SecretAccessKey, "AWS_SESSION_TOKEN": "",
		"AWS_REGION": "eu-west-1", "AWS_DEFAULT_REGION": "", "AWS_PROFILE": "",
		"AWS_CONFIG_FILE": none, "AWS_SHARED_CREDENTIALS_FILE": none,
		"AWS_EC2_METADATA_DISABLED": "true", "AWS_ENDPOINT_URL": "",
	} {
		t.Setenv(k, v)
	}
}

// TestTableSinkSigV4Run runs `pqsink run` on a REST catalog that, like
// AWS Glue's Iceberg REST endpoint, takes only requests SigV4-signed for
// its region and service (the test's own server, which recomputes each
// signature with the AWS SDK's signer), with the AWS credentials and
// region in the environment. `pqsink run --check` signs its requests and
// creates nothing; it fails, saying why, when the configured region is
// not the endpoint's and when the environment has no credentials. A run
// commits every record once, read back through iceberg-go's own REST
// client signing its requests, and by DuckDB over the data files the
// snapshot lists. No output holds the secret key, not even the effective
// configuration logged at debug level.
func TestTableSinkSigV4Run(t *testing.T) {
	const partitions, n, group = 3, 2000, "sigv4run"
	env := newTableEnv(t, "sigv4run")
	srv := env.restCatalog(t, icebergrest.Options{Warehouse: "123456789012", Prefix: "catalogs/123456789012", SigV4: icebergrest.TestSigV4()})
	sigV4Env(t)
	broker := kafkatest.Start(t, partitions, env.topic)
	config := func(extra string) string {
		return env.restConfig(t, broker.Brokers, group, "type: rest\n    uri: "+srv.URL+"\n    warehouse: '123456789012'\n    sigv4: true\n    signing_name: glue"+extra)
	}
	noSecret := func(what, out string) {
		t.Helper()
		if strings.Contains(out, icebergrest.SecretAccessKey) {
			t.Errorf("%s shows the AWS secret key:\n%s", what, out)
		}
	}
	check := func(name, text string, env ...string) (string, error) {
		t.Helper()
		path := filepath.Join(t.TempDir(), name+".yaml")
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(pqsinkBinary(t), "run", "--check", "--config", path)
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		noSecret("pqsink run --check ("+name+")", string(out))
		return string(out), err
	}

	// pqsink run --check signs its requests and creates nothing.
	if out, err := check("check", config("")); err != nil || !strings.Contains(out, "is valid") {
		t.Errorf("pqsink run --check: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(strings.TrimPrefix(env.warehouse, "file://"), "kafka", env.topic)); !os.IsNotExist(err) {
		t.Errorf("the check created the table's folder (%v)", err)
	}
	authed, commits, _ := srv.Counts()
	if authed == 0 || commits != 0 || len(srv.Refusals()) != 0 {
		t.Errorf("pqsink run --check: the server took %d signed requests, %d commits, and refused %q; want some, none, none", authed, commits, srv.Refusals())
	}
	// Signed for another region than the endpoint's: refused, saying so.
	out, err := check("region", config("\n    region: us-east-1"))
	if err == nil || !strings.Contains(out, "signed for region us-east-1; this endpoint's is eu-west-1") || !strings.Contains(out, "check table.catalog.region") {
		t.Errorf("pqsink run --check signing for another region: %v\n%s", err, out)
	}
	// No credentials: refused before any request.
	before := len(srv.Refusals())
	out, err = check("nocreds", config(""), "AWS_ACCESS_KEY_ID=", "AWS_SECRET_ACCESS_KEY=")
	if err == nil || !strings.Contains(out, "no AWS credentials to sign the requests with") || len(srv.Refusals()) != before {
		t.Errorf("pqsink run --check without credentials: %v, %d more refusals\n%s", err, len(srv.Refusals())-before, out)
	}

	// A run commits every record, its requests all signed.
	produceEvents(t, broker.Brokers, env.topic, 0, n)
	refusals := len(srv.Refusals())
	run := startSinkProcess(t, "sink-sigv4", config("\n    region: eu-west-1")+"log:\n  level: debug\n")
	run.waitLog(t, "effective configuration", time.Minute)
	env.waitRows(t, n, 2*time.Minute)
	run.terminate(t, 30*time.Second)
	noSecret(run.name+"'s log", run.log.String())
	if log := run.log.String(); !strings.Contains(log, "sigv4: true") || !strings.Contains(log, "signing_name: glue") {
		t.Errorf("the effective configuration does not show the signing:\n%s", log)
	}
	if _, commits, tokens := srv.Counts(); commits == 0 || tokens != 0 || len(srv.Refusals()) != refusals {
		t.Errorf("the run: %d commits, %d tokens issued, refused %q; want some, none, none", commits, tokens, srv.Refusals()[refusals:])
	}
	truth := readTopic(t, broker.Brokers, env.topic, partitions)
	env.checkKafkaFollows(t, broker.Brokers, group, partitions)

	// Read back through the signing REST catalog: iceberg-go's scan, and
	// DuckDB over the files of the snapshot.
	ctx := context.Background()
	cat, err := rest.NewCatalog(ctx, "reader", srv.URL, rest.WithWarehouseLocation("123456789012"), rest.WithSigV4RegionSvc("eu-west-1", "glue"))
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
