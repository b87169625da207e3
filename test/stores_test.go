package test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/pqsink/pqsink/internal/testutil/azurite"
	"github.com/pqsink/pqsink/internal/testutil/fakegcs"
	"github.com/pqsink/pqsink/internal/testutil/faultproxy"
	"github.com/pqsink/pqsink/internal/testutil/minio"
	"github.com/pqsink/pqsink/objstore"
)

// storeTarget is an object store that a sink test archives into, started
// by the test: its store.url, the rest of the store section that reaches
// it, and a handle of the test's own for reading back. The exactly-once
// tests run over several (storeKinds) with one body.
type storeTarget struct {
	kind string // file, s3, gcs or azure
	url  string // store.url
	// keys are the store section's lines after url (endpoint,
	// credentials), each indented by two spaces and ending in a newline.
	keys string
	// faultProxy starts a faultproxy in front of the store's server, and
	// keysVia returns the keys that reach the store through a proxy's
	// base URL. Neither is set for a directory.
	faultProxy func(t *testing.T, seed uint64) *faultproxy.Proxy
	keysVia    func(base string) string
	// s3 is MinIO's own client, for an s3 target.
	s3 *s3.Client
	// tableURL is the location as a table's warehouse names it (Azure:
	// abfss://, the form Iceberg readers take), and iceberg the
	// properties with which iceberg-go's own IO reaches the store.
	tableURL string
	iceberg  iceberg.Properties
	// open opens a location of the store (url: the target's or another
	// in the same bucket) for the test to read back, as the sink reaches it.
	open func(t *testing.T, url string) objstore.Store
}

// storeKinds are the stores that the exactly-once tests of sink
// processes run over: a local directory, Google Cloud Storage
// (fake-gcs-server) and Azure Blob Storage (Azurite). S3 (MinIO) has its
// own tests of these (TestSinkFaults, TestSinkEndToEnd, ...).
func storeKinds() []string { return []string{"file", "gcs", "azure"} }

// newStoreTarget starts a store of the kind (and its server, for the
// test's lifetime) and returns a target in it under prefix.
func newStoreTarget(t *testing.T, kind, prefix string) storeTarget {
	t.Helper()
	switch kind {
	case "file":
		url := "file://" + t.TempDir() + "/" + prefix
		return storeTarget{kind: kind, url: url, tableURL: url, iceberg: iceberg.Properties{},
			open: func(t *testing.T, url string) objstore.Store { return openStore(t, url) }}
	case "s3":
		srv := minio.Start(t)
		bucket := srv.NewBucket(t)
		keysVia := func(base string) string {
			return fmt.Sprintf("  endpoint: %s\n  region: %s\n  path_style: true\n  access_key: %s\n  secret_key: %s\n", base, srv.Region, srv.AccessKey, srv.SecretKey)
		}
		url := fmt.Sprintf("s3://%s/%s", bucket, prefix)
		return storeTarget{kind: kind, url: url, tableURL: url,
			keys: keysVia(srv.Endpoint), keysVia: keysVia, s3: srv.Client(),
			faultProxy: func(t *testing.T, seed uint64) *faultproxy.Proxy {
				return faultproxy.Start(t, srv.Endpoint, seed) // which keeps the signed Host
			},
			iceberg: iceberg.Properties{icebergio.S3EndpointURL: srv.Endpoint, icebergio.S3Region: srv.Region,
				icebergio.S3AccessKeyID: srv.AccessKey, icebergio.S3SecretAccessKey: srv.SecretKey, icebergio.S3ForceVirtualAddressing: "false"},
			open: func(t *testing.T, url string) objstore.Store {
				return openStore(t, url+"?endpoint="+srv.Endpoint+"&path_style=true&region="+srv.Region,
					objstore.StaticCredentials(srv.AccessKey, srv.SecretKey, ""))
			}}
	case "gcs":
		srv := fakegcs.Start(t)
		keysVia := func(base string) string { return fmt.Sprintf("  endpoint: %s\n", base) }
		url := fmt.Sprintf("gs://%s/%s", srv.NewBucket(), prefix)
		return storeTarget{kind: kind, url: url, tableURL: url,
			keys: keysVia(srv.Endpoint), keysVia: keysVia,
			faultProxy: func(t *testing.T, seed uint64) *faultproxy.Proxy {
				return faultproxy.StartFor(t, srv.Endpoint, seed, faultproxy.GCSOperation)
			},
			iceberg: iceberg.Properties{icebergio.GCSEndpoint: srv.Endpoint + "/storage/v1/", icebergio.GCSNoAuth: "true", icebergio.GCSUseJSONAPI: "true"},
			open: func(t *testing.T, url string) objstore.Store {
				return openStore(t, url, objstore.Endpoint(srv.Endpoint))
			}}
	case "azure":
		srv := azurite.Start(t)
		// The sink processes inherit the environment.
		t.Setenv(objstore.EnvAzureAccount, srv.Account)
		t.Setenv(objstore.EnvAzureKey, srv.Key)
		t.Setenv(objstore.EnvAzureSASToken, "")
		// The account's URL is path-style: base URL and account name.
		base := strings.TrimSuffix(srv.Endpoint, "/"+srv.Account)
		keysVia := func(base string) string { return fmt.Sprintf("  endpoint: %s/%s\n", base, srv.Account) }
		container := srv.NewContainer(t)
		return storeTarget{kind: kind, url: fmt.Sprintf("azblob://%s/%s", container, prefix),
			tableURL: fmt.Sprintf("abfss://%s@%s.dfs.core.windows.net/%s", container, srv.Account, prefix),
			keys:     keysVia(base), keysVia: keysVia,
			faultProxy: func(t *testing.T, seed uint64) *faultproxy.Proxy {
				return faultproxy.StartFor(t, base, seed, faultproxy.AzureOperation)
			},
			iceberg: iceberg.Properties{icebergio.ADLSSharedKeyAccountName: srv.Account, icebergio.ADLSSharedKeyAccountKey: srv.Key,
				icebergio.ADLSEndpoint: strings.TrimPrefix(base, "http://"), icebergio.ADLSProtocol: "http"},
			open: func(t *testing.T, url string) objstore.Store {
				return openStore(t, url, objstore.Endpoint(srv.Endpoint))
			}}
	}
	t.Fatalf("no store kind %q", kind)
	return storeTarget{}
}

// openStore opens a store that the test closes when it ends.
func openStore(t *testing.T, url string, opts ...objstore.Option) objstore.Store {
	t.Helper()
	s, err := objstore.Open(context.Background(), url, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// store opens the target's own location.
func (s storeTarget) store(t *testing.T) objstore.Store {
	t.Helper()
	return s.open(t, s.url)
}

// config sets cfg's store.url to the target's, with the keys that reach it.
func (s storeTarget) config(cfg *sinkConfig) {
	cfg.storeURL, cfg.storeKeys = s.url, s.keys
}

// tableConfig sets cfg's store.url to the target's table form (a
// warehouse), with the keys that reach it.
func (s storeTarget) tableConfig(cfg *sinkConfig) {
	cfg.storeURL, cfg.storeKeys = s.tableURL, s.keys
}
