package test

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	icebergio "github.com/apache/iceberg-go/io"
	itable "github.com/apache/iceberg-go/table"

	"github.com/pqsink/pqsink/internal/testutil/azurite"
	kafkatest "github.com/pqsink/pqsink/internal/testutil/kafka"
	"github.com/pqsink/pqsink/objstore"
)

// TestTableSinkAzure archives a topic into an Iceberg table whose
// warehouse is on Azure Blob Storage (Azurite), as
// abfss://CONTAINER@ACCOUNT.dfs.core.windows.net/PREFIX, with a SQLite
// catalog: `pqsink run` is killed with SIGKILL after it has uploaded files
// but before any table commit, and a second run adopts those files (their
// re-uploads are refused by If-None-Match: *) and commits the table. The
// table, read back by iceberg-go through its own Azure IO, holds every
// record once, and its files are blobs of the container under the prefix.
func TestTableSinkAzure(t *testing.T) {
	const partitions, n = 3, 3000
	srv := azurite.Start(t)
	t.Setenv(objstore.EnvAzureAccount, srv.Account)
	t.Setenv(objstore.EnvAzureKey, srv.Key)
	t.Setenv(objstore.EnvAzureSASToken, "")
	container := srv.NewContainer(t)
	env := newTableEnv(t, "azure")
	env.warehouse = fmt.Sprintf("abfss://%s@%s.dfs.core.windows.net/lake", container, srv.Account)
	broker := kafkatest.Start(t, partitions, env.topic)
	produceEvents(t, broker.Brokers, env.topic, 0, n)
	config := func(commitInterval string) string {
		text := env.config(t, broker.Brokers, "azure-table", commitInterval, 500)
		return replaceYAML(t, text, "  url: "+env.warehouse+"\n", "  url: "+env.warehouse+"\n  endpoint: "+srv.Endpoint+"\n")
	}

	p := startSinkProcess(t, "sink-azure-uncommitted", config("10m"))
	p.waitLog(t, "msg=uploaded", time.Minute)
	time.Sleep(2 * time.Second) // more uploads, no table commit
	if strings.Contains(p.log.String(), "msg=\"table commit\"") {
		t.Fatal("the table was committed before the kill; the test needs it not to be")
	}
	p.kill(t)
	if rows := azureTableRows(t, env, srv); len(rows) != 0 {
		t.Fatalf("the table holds %d rows before any commit", len(rows))
	}

	last := startSinkProcess(t, "sink-azure-after", config("1s"))
	last.waitLog(t, "generation started", time.Minute)
	deadline := time.Now().Add(2 * time.Minute)
	for len(azureTableRows(t, env, srv)) < n {
		if time.Now().After(deadline) {
			t.Fatalf("the table holds %d rows after 2 minutes, want %d", len(azureTableRows(t, env, srv)), n)
		}
		time.Sleep(300 * time.Millisecond)
	}
	last.terminate(t, 30*time.Second)
	if !strings.Contains(last.log.String(), "adopted existing object") {
		t.Error("the second run adopted no object: the crash window between upload and table commit was not exercised")
	}
	checkTableRows(t, azureTableRows(t, env, srv), readTopic(t, broker.Brokers, env.topic, partitions))
	for _, log := range []string{p.log.String(), last.log.String()} {
		if strings.Contains(log, srv.Key) {
			t.Errorf("a sink's log shows the account key")
		}
	}

	// The table's data files are blobs of the container, under the prefix.
	ctx := context.Background()
	pager := srv.Container(t, container).NewListBlobsFlatPager(nil)
	var data, metadata int
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range page.Segment.BlobItems {
			if strings.HasPrefix(*b.Name, "lake/kafka/azure/data/") && strings.HasSuffix(*b.Name, ".parquet") {
				data++
			}
			if strings.HasSuffix(*b.Name, ".metadata.json") {
				// The table's metadata holds no credential.
				resp, err := srv.Container(t, container).NewBlobClient(*b.Name).DownloadStream(ctx, nil)
				if err != nil {
					t.Fatal(err)
				}
				text, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil {
					t.Fatal(err)
				}
				metadata++
				if strings.Contains(string(text), srv.Key) {
					t.Errorf("%s shows the account key", *b.Name)
				}
			}
		}
	}
	if data == 0 || metadata == 0 {
		t.Errorf("%d data files under lake/kafka/azure/data/ and %d metadata files in container %s, want some of each", data, metadata, container)
	}
}

// azureTableRows reads the table's current snapshot with iceberg-go and
// its Azure IO, given the Azurite account's endpoint and shared key; nil
// when the table does not exist yet.
func azureTableRows(t *testing.T, env *tableEnv, srv *azurite.Server) []tableRow {
	t.Helper()
	ctx := context.Background()
	db, dialect := env.openCatalog(t)
	defer db.Close()
	host := strings.TrimPrefix(srv.Endpoint, "http://")
	host = strings.TrimSuffix(host, "/"+srv.Account)
	cat, err := sqlcat.NewCatalog("pqsink", db, dialect, iceberg.Properties{
		"warehouse":                        env.warehouse,
		icebergio.ADLSSharedKeyAccountName: srv.Account,
		icebergio.ADLSSharedKeyAccountKey:  srv.Key,
		icebergio.ADLSEndpoint:             host,
		icebergio.ADLSProtocol:             "http",
	})
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := cat.LoadTable(ctx, itable.Identifier{"kafka", env.topic})
	if err != nil {
		return nil
	}
	return env.rows(t, tbl)
}
