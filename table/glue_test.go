package table

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	itable "github.com/apache/iceberg-go/table"
	"github.com/aws/aws-sdk-go-v2/aws"
	awsglue "github.com/aws/aws-sdk-go-v2/service/glue"
	gluetypes "github.com/aws/aws-sdk-go-v2/service/glue/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/pqsink/pqsink/config"
	"github.com/pqsink/pqsink/internal/testutil/gluefake"
	"github.com/pqsink/pqsink/internal/testutil/minio"
	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/rowgroup"
	"github.com/pqsink/pqsink/schema"
)

// glueKey is the access key the tests' AWS credentials carry.
const glueKey = "AKIDPQSINKTEST"

// glueEnv is an env whose catalog is a Glue server of the test's own,
// reached with AWS credentials from the environment, as on AWS.
func glueEnv(t *testing.T) (*env, *gluefake.Server) {
	t.Helper()
	srv := gluefake.Start(t, gluefake.Options{AccessKeyID: glueKey})
	awsEnv(t, glueKey, "eu-west-1")
	e := newEnv(t)
	e.cfg.Table.Catalog = config.Catalog{Type: "glue", Name: "pqsink", Endpoint: srv.URL, CatalogID: "123456789012"}
	return e, srv
}

// awsEnv gives the AWS SDK's default chain these credentials and region,
// and nothing from the machine's own files or instance role.
func awsEnv(t *testing.T, key, region string) {
	none := filepath.Join(t.TempDir(), "none")
	for k, v := range map[string]string{
		"AWS_ACCESS_KEY_ID": key, "AWS_SECRET_ACCESS_KEY": "pqsink-test-secret", "AWS_SESSION_TOKEN": "",
		"AWS_REGION": region, "AWS_DEFAULT_REGION": "", "AWS_PROFILE": "",
		"AWS_CONFIG_FILE": none, "AWS_SHARED_CREDENTIALS_FILE": none,
		"AWS_EC2_METADATA_DISABLED": "true", "AWS_ENDPOINT_URL": "", "AWS_ENDPOINT_URL_GLUE": "",
	} {
		t.Setenv(k, v)
	}
}

// TestGlueCatalog: the sink's table in a Glue Data Catalog: the database
// and the table created where Athena looks for them, adopted by a second
// member, committed to by both with each kind of conflict on the way (the
// table moved before the commit read it: a broken requirement; after: a
// stale VersionId, Glue's ConcurrentModificationException), each retry
// merging the state, read back, evolved.
func TestGlueCatalog(t *testing.T) {
	ctx := context.Background()
	e, srv := glueEnv(t)
	c2, h1, h2, mine, _ := racingMembers(t, e)
	res, err := h1.Commit(ctx, "g", []File{mine}, State{{"g", "events", 0}: {Committed: 10}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Attempts != 2 || res.Appended != 1 {
		t.Errorf("commit = %+v, want 2 attempts, 1 appended", res)
	}

	// The other member commits while the first one's UpdateTable is on its
	// way, with the VersionId it read.
	h1.beforeSwap = nil
	loc := c2.Location("events")
	second := writeFile(t, h1, loc, "events", 0, 10, 19, sameDay)
	theirs := writeFile(t, h2, loc, "events", 2, 0, 9, sameDay)
	srv.BeforeUpdate(func() {
		if _, err := h2.Commit(ctx, "g", []File{theirs}, State{{"g", "events", 2}: {Committed: 10}}); err != nil {
			t.Error(err)
		}
	})
	res, err = h1.Commit(ctx, "g", []File{second}, State{{"g", "events", 0}: {Committed: 20}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Attempts != 2 || res.Appended != 1 || srv.Conflicts() != 1 {
		t.Errorf("commit = %+v with %d VersionId conflicts, want 2 attempts, 1 appended, 1 conflict", res, srv.Conflicts())
	}

	// A new connection reads every commit back.
	c3 := e.open(t)
	h3, err := c3.Existing(ctx, []string{"kafka", "events"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := h3.State(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := State{{"g", "events", 0}: {Committed: 20}, {"g", "events", 1}: {Committed: 10}, {"g", "events", 2}: {Committed: 10}}
	if !equalState(got, want) {
		t.Errorf("state = %v, want %v", got, want)
	}
	tbl, err := c3.cat.LoadTable(ctx, itable.Identifier{"kafka", "events"})
	if err != nil {
		t.Fatal(err)
	}
	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(tasks) != 4 {
		t.Errorf("%d files in the table, want 4", len(tasks))
	}
	if tables, err := c3.Tables(ctx); err != nil || !reflect.DeepEqual(tables, [][]string{{"kafka", "events"}}) {
		t.Errorf("Tables = %v, %v", tables, err)
	}

	// What Athena reads: an ICEBERG table in database kafka whose
	// metadata_location is the current metadata file, under store.url.
	params, version, ok := srv.Table("kafka", "events")
	if !ok {
		t.Fatal("no Glue table kafka.events")
	}
	if params["table_type"] != "ICEBERG" || params["metadata_location"] != tbl.MetadataLocation() {
		t.Errorf("Glue parameters %v, want table_type ICEBERG and metadata_location %s", params, tbl.MetadataLocation())
	}
	if wantLoc := e.warehouse + "/kafka/events"; tbl.Location() != wantLoc || !strings.HasPrefix(tbl.MetadataLocation(), wantLoc+"/metadata/") {
		t.Errorf("location %s, metadata %s, want under %s", tbl.Location(), tbl.MetadataLocation(), wantLoc)
	}
	// Created as version 1, then four commits: five UpdateTable calls, the
	// stale one refused.
	if version != "5" || srv.Calls("UpdateTable") != 5 {
		t.Errorf("VersionId %s after %d UpdateTable calls, want 5 after 5 (one refused)", version, srv.Calls("UpdateTable"))
	}
	if ids := srv.CatalogIDs(); !reflect.DeepEqual(ids, []string{"123456789012"}) {
		t.Errorf("catalog ids %v, want the configured one", ids)
	}

	// Evolution: a new optional field is added by a commit of its own.
	ext, err := schema.New("event",
		schema.Leaf("id", schema.Required, meta.TypeInt64, schema.Logical{}),
		schema.Leaf("extra", schema.Optional, meta.TypeInt32, schema.Logical{}),
		rowgroup.EnvelopeNode())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c3.Table(ctx, "events", ext); err != nil {
		t.Fatal(err)
	}
	tbl, err = c3.cat.LoadTable(ctx, itable.Identifier{"kafka", "events"})
	if err != nil {
		t.Fatal(err)
	}
	if f, ok := tbl.Schema().FindFieldByName("extra"); !ok || f.Required {
		t.Errorf("extra = %+v (found %v), want an optional field", f, ok)
	}
	if _, version, _ := srv.Table("kafka", "events"); version != "6" {
		t.Errorf("VersionId %s after the evolution, want 6", version)
	}
}

// TestGlueCatalogRefused: without a region the catalog does not open, and
// a request signed with other credentials than the catalog accepts fails
// with Glue's error, not as a missing table.
func TestGlueCatalogRefused(t *testing.T) {
	ctx := context.Background()
	e, _ := glueEnv(t)
	t.Setenv("AWS_REGION", "")
	if _, err := Open(ctx, e.cfg); err == nil || !strings.Contains(err.Error(), "no AWS region") {
		t.Errorf("Open without a region: %v", err)
	}
	e.cfg.Table.Catalog.Region = "eu-west-1"
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDSOMEONEELSE")
	c := e.open(t)
	_, err := c.Table(ctx, "events", eventSchema(t))
	if err == nil || !strings.Contains(err.Error(), "AccessDeniedException") || errors.Is(err, ErrNoSuchTable) {
		t.Errorf("Table with other credentials: %v", err)
	}
}

// TestConflict: the errors of a lost compare-and-swap are conflicts, and
// others are not.
func TestConflict(t *testing.T) {
	cme := &gluetypes.ConcurrentModificationException{Message: new(string)}
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"commit failed", fmt.Errorf("x: %w", itable.ErrCommitFailed), true},
		{"glue as iceberg-go wraps it", fmt.Errorf("%w: %w", itable.ErrCommitFailed, cme), true},
		{"glue unwrapped", fmt.Errorf("operation UpdateTable: %w", cme), true},
		{"requirement", errors.New("Requirement failed: branch main has changed"), true},
		{"not found", fmt.Errorf("x: %w", &gluetypes.EntityNotFoundException{}), false},
		{"denied", &gluetypes.AccessDeniedException{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := conflict(tc.err); got != tc.want {
				t.Errorf("conflict(%v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
}

// TestGlueCatalogS3: a Glue catalog over an s3:// warehouse (MinIO): the
// metadata goes to the store with the store's own endpoint and keys,
// while Glue is called at its endpoint with the credentials of the
// environment, which the store would refuse.
func TestGlueCatalogS3(t *testing.T) {
	ctx := context.Background()
	e, srv := glueEnv(t)
	m := minio.Start(t)
	bucket := m.NewBucket(t)
	e.cfg.Store = config.Store{URL: "s3://" + bucket + "/lake", Endpoint: m.Endpoint, Region: m.Region, PathStyle: true,
		AccessKey: m.AccessKey, SecretKey: config.Secret(m.SecretKey)}
	c := e.open(t)
	h, err := c.Table(ctx, "events", eventSchema(t))
	if err != nil {
		t.Fatal(err)
	}
	f := writeFile(t, h, "file://"+e.dir+"/local", "events", 0, 0, 9, sameDay)
	f.Location = c.Location("events") + "/data/events+0+00000000000000000000.parquet"
	if _, err := h.Commit(ctx, "g", []File{f}, State{{"g", "events", 0}: {Committed: 10}}); err != nil {
		t.Fatal(err)
	}
	got, err := e.open(t).Existing(ctx, []string{"kafka", "events"})
	if err != nil {
		t.Fatal(err)
	}
	state, err := got.State(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := (State{{"g", "events", 0}: {Committed: 10}}); !equalState(state, want) {
		t.Errorf("state = %v, want %v", state, want)
	}
	params, _, _ := srv.Table("kafka", "events")
	meta := params["metadata_location"]
	key, ok := strings.CutPrefix(meta, "s3://"+bucket+"/")
	if !ok || !strings.HasPrefix(key, "lake/kafka/events/metadata/") {
		t.Fatalf("metadata_location %q, want under s3://%s/lake/kafka/events/metadata/", meta, bucket)
	}
	if _, err := m.Client().HeadObject(ctx, &s3.HeadObjectInput{Bucket: &bucket, Key: &key}); err != nil {
		t.Errorf("the current metadata file is not in the bucket: %v", err)
	}
}

// TestGlueEndpointIsGluesAlone: table.catalog.endpoint moves Glue's
// requests only; S3's (iceberg-go hands the same AWS configuration to the
// warehouse's S3 client) stay with the SDK's resolution.
func TestGlueEndpointIsGluesAlone(t *testing.T) {
	r := glueEndpoint("https://glue.example.com", "eu-west-1")
	for _, tc := range []struct {
		service, want string
	}{
		{awsglue.ServiceID, "https://glue.example.com"},
		{"S3", ""},
		{"STS", ""},
	} {
		ep, err := r.ResolveEndpoint(tc.service, "eu-west-1")
		var nf *aws.EndpointNotFoundError
		switch {
		case tc.want == "" && !errors.As(err, &nf):
			t.Errorf("%s: endpoint %+v, %v; want the SDK's own", tc.service, ep, err)
		case tc.want != "" && (err != nil || ep.URL != tc.want || ep.SigningRegion != "eu-west-1"):
			t.Errorf("%s: endpoint %+v, %v; want %s signed for eu-west-1", tc.service, ep, err, tc.want)
		}
	}
}

// TestGlueCatalogMixedCase: Glue keeps names in lower case; a table named
// with capitals (a topic Orders) is created, committed to and read back
// under either spelling.
func TestGlueCatalogMixedCase(t *testing.T) {
	ctx := context.Background()
	e, srv := glueEnv(t)
	e.cfg.Table.Namespace = "Kafka"
	c := e.open(t)
	h, err := c.Table(ctx, "Orders", eventSchema(t))
	if err != nil {
		t.Fatal(err)
	}
	f := writeFile(t, h, c.Location("Orders"), "Orders", 0, 0, 9, sameDay)
	if _, err := h.Commit(ctx, "g", []File{f}, State{{"g", "Orders", 0}: {Committed: 10}}); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := srv.Table("kafka", "orders"); !ok {
		t.Error("no Glue table kafka.orders")
	}
	for _, ident := range [][]string{{"Kafka", "Orders"}, {"kafka", "orders"}} {
		h, err := e.open(t).Existing(ctx, ident)
		if err != nil {
			t.Fatalf("%v: %v", ident, err)
		}
		state, err := h.State(ctx)
		if want := (State{{"g", "Orders", 0}: {Committed: 10}}); err != nil || !equalState(state, want) {
			t.Errorf("%v: state %v, %v; want %v", ident, state, err, want)
		}
	}
}
