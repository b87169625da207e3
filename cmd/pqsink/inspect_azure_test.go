package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pqsink/pqsink/internal/testutil/azurite"
	"github.com/pqsink/pqsink/objstore"
)

// TestInspectAzure reads a file straight from Azure Blob Storage's API
// (Azurite, started by the test), named by an azblob:// URL with the
// emulator in its query, with the account's shared key in the environment.
func TestInspectAzure(t *testing.T) {
	srv := azurite.Start(t)
	t.Setenv(objstore.EnvAzureAccount, srv.Account)
	t.Setenv(objstore.EnvAzureKey, srv.Key)
	t.Setenv(objstore.EnvAzureSASToken, "")
	container := srv.NewContainer(t)
	dir := t.TempDir()
	schemaFile := writeFile(t, dir, "m.schema", testSchema)
	in := writeFile(t, dir, "in.jsonl", testInput)
	out := filepath.Join(dir, "out.parquet")
	if code, _, stderr := pqsink(t, "", "convert", "--schema", schemaFile, in, out); code != 0 {
		t.Fatal(stderr)
	}
	ctx := context.Background()
	store, err := objstore.Open(ctx, "azblob://"+container, objstore.Endpoint(srv.Endpoint))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := objstore.Put(ctx, store, "landing/out.parquet", f); err != nil {
		t.Fatal(err)
	}

	const want = "{\"id\":1}\n{\"id\":2}\n{\"id\":3}"
	url := "azblob://" + container + "/landing/out.parquet?endpoint=" + srv.Endpoint
	code, stdout, stderr := pqsink(t, "", "inspect", "rows", "--json", "--columns", "id", url)
	if code != 0 || strings.TrimSpace(stdout) != want {
		t.Fatalf("inspect rows %s: exit %d, %q, %s", url, code, stdout, stderr)
	}
	code, _, stderr = pqsink(t, "", "inspect", "meta", "azblob://"+container+"/missing.parquet?endpoint="+srv.Endpoint)
	if code != 1 || !strings.Contains(stderr, "missing.parquet") {
		t.Errorf("missing object: exit %d, %q", code, stderr)
	}
	if strings.Contains(stderr, srv.Key) {
		t.Error("the error shows the account key")
	}
}
