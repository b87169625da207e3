package table

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/apache/iceberg-go/catalog/rest"
	itable "github.com/apache/iceberg-go/table"

	"github.com/pqsink/pqsink/config"
	"github.com/pqsink/pqsink/internal/testutil/icebergrest"
)

// sigV4Env is an env whose catalog is a REST catalog of the test's own
// that, as Glue's Iceberg REST endpoint of eu-west-1 does, takes only
// requests SigV4-signed for eu-west-1 and glue by the test's credentials,
// given in the environment; the server answers with a prefix, as Glue's
// does. backing is the catalog behind the server.
func sigV4Env(t *testing.T) (e *env, srv *icebergrest.Server, backing *Catalog) {
	t.Helper()
	backingEnv := newEnv(t)
	backing = backingEnv.open(t)
	srv = icebergrest.Start(t, backing.cat, icebergrest.Options{
		Warehouse: "123456789012", Prefix: "catalogs/123456789012", SigV4: icebergrest.TestSigV4(),
	})
	awsEnv(t, icebergrest.AccessKeyID, "eu-west-1")
	t.Setenv("AWS_SECRET_ACCESS_KEY", icebergrest.SecretAccessKey)
	e = newEnv(t)
	e.cfg.Store.URL = backingEnv.cfg.Store.URL
	e.warehouse = backingEnv.warehouse
	e.cfg.Table.Catalog = config.Catalog{Type: "rest", Name: "pqsink", URI: config.Secret(srv.URL), Warehouse: "123456789012",
		SigV4: true, SigningName: "glue"}
	return e, srv, backing
}

// TestRESTCatalogSigV4: the sink's table through a REST catalog that
// takes only SigV4-signed requests, with the credentials and region of
// the AWS SDK's default chain: created, committed to by two members with
// a conflict on the way, read back through a new signed connection and
// through iceberg-go's own REST client, signing by itself. The server
// checked every request's signature and refused none.
func TestRESTCatalogSigV4(t *testing.T) {
	ctx := context.Background()
	e, srv, backing := sigV4Env(t)
	_, h1, _, mine, _ := racingMembers(t, e)
	res, err := h1.Commit(ctx, "g", []File{mine}, State{{"g", "events", 0}: {Committed: 10}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Attempts != 2 || res.Appended != 1 {
		t.Errorf("commit = %+v, want 2 attempts, 1 appended", res)
	}
	got, err := h1.State(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := (State{{"g", "events", 0}: {Committed: 10}, {"g", "events", 1}: {Committed: 10}}); !equalState(got, want) {
		t.Errorf("state = %v, want %v", got, want)
	}

	// A new signed connection reads every row back.
	want := slices.Sorted(slices.Values(append(upTo(10), upTo(10)...)))
	if ids := scanIDs(t, e, h1, 0); !slices.Equal(ids, want) {
		t.Errorf("ids through the signed catalog = %v, want %v", ids, want)
	}
	// So does iceberg-go's own REST client, signing for itself, and the
	// catalog behind the server holds both files.
	cat, err := rest.NewCatalog(ctx, "reader", srv.URL, rest.WithWarehouseLocation("123456789012"), rest.WithSigV4RegionSvc("eu-west-1", "glue"))
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]interface {
		LoadTable(context.Context, itable.Identifier) (*itable.Table, error)
	}{"iceberg-go's REST client": cat, "the backing catalog": backing.cat} {
		tbl, err := c.LoadTable(ctx, itable.Identifier{"kafka", "events"})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if tasks, err := tbl.Scan().PlanFiles(ctx); err != nil || len(tasks) != 2 {
			t.Errorf("%s: %d files in the table (%v), want 2", name, len(tasks), err)
		}
	}
	authed, commits, tokens := srv.Counts()
	if commits != 2 || authed < 8 || tokens != 0 {
		t.Errorf("the server saw %d commits and %d signed requests, and issued %d tokens", commits, authed, tokens)
	}
	if r := srv.Refusals(); len(r) != 0 {
		t.Errorf("the server refused %q", r)
	}
}

// TestRESTCatalogSigV4Refused: a catalog whose requests would not be
// accepted does not open, with an error that says why: signed for another
// region or service than the endpoint's, or with credentials it does not
// know or a secret that is not theirs (all refused by the server, which
// recomputes the signature); no credentials or no region at all (found
// before any request). No error shows the secret key.
func TestRESTCatalogSigV4Refused(t *testing.T) {
	const otherSecret = "not-the-sigv4-s3cret"
	for _, tc := range []struct {
		name    string
		setup   func(t *testing.T, c *config.Catalog)
		want    []string
		refusal string // the server's reason; "" when no request is made
	}{
		{"another region", func(t *testing.T, c *config.Catalog) { c.Region = "us-east-1" },
			[]string{"signed with SigV4 for region us-east-1 and service glue with access key " + icebergrest.AccessKeyID, "check table.catalog.region",
				"signed for region us-east-1; this endpoint's is eu-west-1"},
			"signed for region us-east-1"},
		{"another service", func(t *testing.T, c *config.Catalog) { c.SigningName = "s3tables" },
			[]string{"for region eu-west-1 and service s3tables", "table.catalog.signing_name", "signed for service s3tables; this endpoint's is glue"},
			"signed for service s3tables"},
		{"another access key", func(t *testing.T, _ *config.Catalog) { t.Setenv("AWS_ACCESS_KEY_ID", "AKIDSOMEONEELSE") },
			[]string{"with access key AKIDSOMEONEELSE", "the access key AKIDSOMEONEELSE is not known here"},
			"AKIDSOMEONEELSE is not known"},
		{"another secret", func(t *testing.T, _ *config.Catalog) { t.Setenv("AWS_SECRET_ACCESS_KEY", otherSecret) },
			[]string{"ForbiddenException", "the signature does not match"},
			"the signature does not match"},
		{"no credentials", func(t *testing.T, _ *config.Catalog) {
			t.Setenv("AWS_ACCESS_KEY_ID", "")
			t.Setenv("AWS_SECRET_ACCESS_KEY", "")
		}, []string{"no AWS credentials to sign the requests with", "AWS_ACCESS_KEY_ID"}, ""},
		{"no region", func(t *testing.T, _ *config.Catalog) { t.Setenv("AWS_REGION", "") },
			[]string{"no AWS region: set table.catalog.region"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, srv, _ := sigV4Env(t)
			tc.setup(t, &e.cfg.Table.Catalog)
			c, err := Open(context.Background(), e.cfg)
			if err == nil {
				c.Close()
				t.Fatal("the catalog opened")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if tc.refusal != "" && !errors.Is(err, rest.ErrForbidden) {
				t.Errorf("error %v is not rest.ErrForbidden", err)
			}
			for _, secret := range []string{icebergrest.SecretAccessKey, otherSecret} {
				if strings.Contains(err.Error(), secret) {
					t.Errorf("error %q shows the secret key", err)
				}
			}
			authed, _, _ := srv.Counts()
			refusals := srv.Refusals()
			switch {
			case authed != 0:
				t.Errorf("the server accepted %d requests", authed)
			case tc.refusal == "" && len(refusals) != 0:
				t.Errorf("the server was asked and refused %q; want no request", refusals)
			case tc.refusal != "" && (len(refusals) != 1 || !strings.Contains(refusals[0], tc.refusal)):
				t.Errorf("the server refused %q, want once for %q", refusals, tc.refusal)
			}
		})
	}
}
