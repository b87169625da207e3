package test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	icebergio "github.com/apache/iceberg-go/io"
	itable "github.com/apache/iceberg-go/table"

	"github.com/fsouza/fake-gcs-server/fakestorage"

	"github.com/pqsink/pqsink/internal/testutil/fakegcs"
	kafkatest "github.com/pqsink/pqsink/internal/testutil/kafka"
)

// TestTableSinkGCS archives a topic into an Iceberg table whose warehouse
// is on Google Cloud Storage (fake-gcs-server, in the test's process),
// gs://BUCKET/PREFIX, with a SQLite catalog: `pqsink run` is killed with
// SIGKILL after it has uploaded files but before any table commit, and a
// second run adopts those files (their re-uploads are refused by the
// ifGenerationMatch=0 precondition) and commits the table. The table, read
// back by iceberg-go through its own GCS IO, holds every record once, and
// its data files are objects of the bucket under the prefix.
func TestTableSinkGCS(t *testing.T) {
	const partitions, n = 3, 3000
	srv := fakegcs.Start(t)
	bucket := srv.NewBucket()
	env := newTableEnv(t, "gcs")
	env.warehouse = fmt.Sprintf("gs://%s/lake", bucket)
	broker := kafkatest.Start(t, partitions, env.topic)
	produceEvents(t, broker.Brokers, env.topic, 0, n)
	config := func(commitInterval string) string {
		text := env.config(t, broker.Brokers, "gcs-table", commitInterval, 500)
		return replaceYAML(t, text, "  url: "+env.warehouse+"\n", "  url: "+env.warehouse+"\n  endpoint: "+srv.Endpoint+"\n")
	}
	rows := func() []tableRow { return gcsTableRows(t, env, srv.Endpoint) }

	p := startSinkProcess(t, "sink-gcs-uncommitted", config("10m"))
	p.waitLog(t, "msg=uploaded", time.Minute)
	time.Sleep(2 * time.Second) // more uploads, no table commit
	if strings.Contains(p.log.String(), "msg=\"table commit\"") {
		t.Fatal("the table was committed before the kill; the test needs it not to be")
	}
	p.kill(t)
	if got := rows(); len(got) != 0 {
		t.Fatalf("the table holds %d rows before any commit", len(got))
	}

	last := startSinkProcess(t, "sink-gcs-after", config("1s"))
	last.waitLog(t, "generation started", time.Minute)
	deadline := time.Now().Add(2 * time.Minute)
	for len(rows()) < n {
		if time.Now().After(deadline) {
			t.Fatalf("the table holds %d rows after 2 minutes, want %d", len(rows()), n)
		}
		time.Sleep(300 * time.Millisecond)
	}
	last.terminate(t, 30*time.Second)
	if !strings.Contains(last.log.String(), "adopted existing object") {
		t.Error("the second run adopted no object: the crash window between upload and table commit was not exercised")
	}
	checkTableRows(t, rows(), readTopic(t, broker.Brokers, env.topic, partitions))

	objs, _, err := srv.Fake().ListObjectsWithOptions(bucket, fakestorage.ListOptions{Prefix: "lake/kafka/gcs/data/"})
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) == 0 {
		t.Errorf("no data file under lake/kafka/gcs/data/ in bucket %s", bucket)
	}
}

// gcsTableRows reads the table's current snapshot with iceberg-go and its
// GCS IO, pointed at the emulator without credentials; nil when the table
// does not exist yet.
func gcsTableRows(t *testing.T, env *tableEnv, endpoint string) []tableRow {
	t.Helper()
	db, dialect := env.openCatalog(t)
	defer db.Close()
	cat, err := sqlcat.NewCatalog("pqsink", db, dialect, iceberg.Properties{
		"warehouse":             env.warehouse,
		icebergio.GCSEndpoint:   endpoint + "/storage/v1/",
		icebergio.GCSNoAuth:     "true",
		icebergio.GCSUseJSONAPI: "true",
	})
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := cat.LoadTable(context.Background(), itable.Identifier{"kafka", env.topic})
	if err != nil {
		return nil
	}
	return env.rows(t, tbl)
}
