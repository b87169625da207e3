package test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"

	"github.com/pqsink/pqsink/config"
	"github.com/pqsink/pqsink/connector"
	"github.com/pqsink/pqsink/internal/testutil/icebergrest"
	kafkatest "github.com/pqsink/pqsink/internal/testutil/kafka"
)

// restCatalog serves a REST catalog over the env's SQL catalog, so that
// what the sink commits through REST is read back (env.scan) from the
// catalog behind it, with iceberg-go.
func (e *tableEnv) restCatalog(t *testing.T, opts icebergrest.Options) *icebergrest.Server {
	t.Helper()
	if file, ok := strings.CutPrefix(e.uri, "sqlite://"); ok {
		if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	db, dialect := e.openCatalog(t)
	t.Cleanup(func() { db.Close() })
	backing, err := sqlcat.NewCatalog("pqsink", db, dialect, iceberg.Properties{"warehouse": e.warehouse})
	if err != nil {
		t.Fatal(err)
	}
	return icebergrest.Start(t, backing, opts)
}

// restConfig is the env's configuration with its catalog section
// replaced by catalog, e.g. "type: rest\n    uri: ...".
func (e *tableEnv) restConfig(t *testing.T, brokers []string, group string, catalog string) string {
	t.Helper()
	text := e.config(t, brokers, group, "1s", 400)
	old := fmt.Sprintf("  catalog:\n    type: sql\n    uri: %s\n", e.uri)
	if !strings.Contains(text, old) {
		t.Fatalf("no catalog section %q in\n%s", old, text)
	}
	return strings.Replace(text, old, "  catalog:\n    "+catalog+"\n", 1)
}

// TestTableSinkREST runs the sink on a REST catalog (the specification's
// endpoints, served by the test over a SQL catalog), with OAuth2 client
// credentials and with a bearer token, a warehouse and a prefix, and
// reads the table back with iceberg-go: every record once. A catalog that
// places the table elsewhere than the sink would is followed when the
// place is under store.url, and refused when it is not.
func TestTableSinkREST(t *testing.T) {
	const partitions, n = 2, 1000
	for _, tc := range []struct {
		name    string
		opts    icebergrest.Options
		catalog string
		managed bool // the server places the table under managed/
	}{
		{name: "client credentials", opts: icebergrest.Options{Warehouse: "analytics"},
			catalog: "type: rest\n    uri: %s\n    warehouse: analytics\n    credential: " + icebergrest.ClientID + ":" + icebergrest.ClientSecret},
		{name: "token, prefix and the server's location", opts: icebergrest.Options{Warehouse: "analytics", Prefix: "analytics"},
			catalog: "type: rest\n    uri: %s\n    warehouse: analytics\n    token: " + icebergrest.Token, managed: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := newTableEnv(t, "rest")
			if tc.managed {
				tc.opts.Locate = func(ident []string, _ string) string {
					return env.warehouse + "/managed/" + strings.Join(ident, "-")
				}
			}
			srv := env.restCatalog(t, tc.opts)
			broker := kafkatest.Start(t, partitions, env.topic)
			text := env.restConfig(t, broker.Brokers, "rest", fmt.Sprintf(tc.catalog, srv.URL))

			produceEvents(t, broker.Brokers, env.topic, 0, n)
			sink, stop := startSink(t, text)
			env.waitRows(t, n, 2*time.Minute)
			stop()
			env.check(t, readTopic(t, broker.Brokers, env.topic, partitions))
			if st := sink.Stats().Snapshot(); st.TableCommits == 0 || st.TableCommitErrors != 0 || st.TablePendingFiles != 0 {
				t.Errorf("table commits %d, commit errors %d, %d files pending", st.TableCommits, st.TableCommitErrors, st.TablePendingFiles)
			}
			authed, commits, tokens := srv.Counts()
			if commits == 0 || authed == 0 {
				t.Errorf("the REST server saw %d commits, %d requests with the token", commits, authed)
			}
			if wantTokens := !strings.Contains(tc.catalog, "token:"); (tokens > 0) != wantTokens {
				t.Errorf("the server issued %d tokens; client credentials: %v", tokens, wantTokens)
			}
			dir := strings.TrimPrefix(env.warehouse, "file://")
			root := filepath.Join(dir, "kafka", env.topic)
			if tc.managed {
				root = filepath.Join(dir, "managed", "kafka-"+env.topic)
			}
			files, err := filepath.Glob(filepath.Join(root, "data", "*", "*.parquet"))
			if err != nil || len(files) == 0 {
				t.Errorf("no data files under the table's location %s (%v)", root, err)
			}
			if tc.managed {
				if other, _ := filepath.Glob(filepath.Join(dir, "kafka", env.topic, "data", "*", "*.parquet")); len(other) != 0 {
					t.Errorf("%d files under the location the sink would have chosen, not the table's", len(other))
				}
			}
		})
	}

	t.Run("a location outside store.url", func(t *testing.T) {
		env := newTableEnv(t, "elsewhere")
		elsewhere := "file://" + t.TempDir()
		srv := env.restCatalog(t, icebergrest.Options{Locate: func(ident []string, _ string) string {
			return elsewhere + "/" + strings.Join(ident, "/")
		}})
		text := env.restConfig(t, []string{"127.0.0.1:1"}, "rest", "type: rest\n    uri: "+srv.URL+"\n    token: "+icebergrest.Token)
		cfg, err := config.Parse([]byte(text), os.LookupEnv)
		if err != nil {
			t.Fatal(err)
		}
		sink, err := connector.New(context.Background(), cfg, slog.New(slog.DiscardHandler))
		if err == nil {
			sink.Close()
		}
		if err == nil || !strings.Contains(err.Error(), "is not under store.url") || !strings.Contains(err.Error(), elsewhere) {
			t.Errorf("a table located outside store.url: err = %v", err)
		}
	})
}
