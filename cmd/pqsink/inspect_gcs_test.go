package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pqsink/pqsink/internal/testutil/fakegcs"
	"github.com/pqsink/pqsink/objstore"
)

// TestInspectGCS reads a file straight from Google Cloud Storage's API
// (fake-gcs-server, in the test's process), with the emulator named in the
// URL and with STORAGE_EMULATOR_HOST.
func TestInspectGCS(t *testing.T) {
	srv := fakegcs.Start(t)
	bucket := srv.NewBucket()
	dir := t.TempDir()
	schemaFile := writeFile(t, dir, "m.schema", testSchema)
	in := writeFile(t, dir, "in.jsonl", testInput)
	out := filepath.Join(dir, "out.parquet")
	if code, _, stderr := pqsink(t, "", "convert", "--schema", schemaFile, in, out); code != 0 {
		t.Fatal(stderr)
	}
	ctx := context.Background()
	store, err := objstore.Open(ctx, "gs://"+bucket, objstore.Endpoint(srv.Endpoint))
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
	url := "gs://" + bucket + "/landing/out.parquet?endpoint=" + srv.Endpoint
	code, stdout, stderr := pqsink(t, "", "inspect", "rows", "--json", "--columns", "id", url)
	if code != 0 || strings.TrimSpace(stdout) != want {
		t.Fatalf("inspect rows %s: exit %d, %q, %s", url, code, stdout, stderr)
	}
	code, _, stderr = pqsink(t, "", "inspect", "meta", "gs://"+bucket+"/missing.parquet?endpoint="+srv.Endpoint)
	if code != 1 || !strings.Contains(stderr, "missing.parquet") {
		t.Errorf("missing object: exit %d, %q", code, stderr)
	}

	t.Setenv("STORAGE_EMULATOR_HOST", srv.Host())
	url = "gs://" + bucket + "/landing/out.parquet"
	code, stdout, stderr = pqsink(t, "", "inspect", "rows", "--json", "--columns", "id", url)
	if code != 0 || strings.TrimSpace(stdout) != want {
		t.Fatalf("inspect rows %s with STORAGE_EMULATOR_HOST: exit %d, %q, %s", url, code, stdout, stderr)
	}
}
