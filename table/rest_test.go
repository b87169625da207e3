package table

import (
	"context"
	"testing"

	itable "github.com/apache/iceberg-go/table"

	"github.com/pqsink/pqsink/config"
	"github.com/pqsink/pqsink/internal/testutil/icebergrest"
)

// TestRESTCatalog: the sink's table through a REST catalog with OAuth2
// client credentials: created, committed to with a conflict on the way,
// read back; the server saw the token on every call.
func TestRESTCatalog(t *testing.T) {
	ctx := context.Background()
	backingEnv := newEnv(t)
	backing := backingEnv.open(t)
	srv := icebergrest.Start(t, backing.cat, icebergrest.Options{})

	e := newEnv(t)
	e.cfg.Store.URL = backingEnv.cfg.Store.URL
	e.cfg.Table.Catalog.Type = "rest"
	e.cfg.Table.Catalog.URI = config.Secret(srv.URL)
	e.cfg.Table.Catalog.Credential = config.Secret(icebergrest.ClientID + ":" + icebergrest.ClientSecret)
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
	// The backing catalog, read directly, holds both files.
	tbl, err := backing.cat.LoadTable(ctx, itable.Identifier{"kafka", "events"})
	if err != nil {
		t.Fatal(err)
	}
	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(tasks) != 2 {
		t.Errorf("%d files in the table, want 2", len(tasks))
	}
	if authed, commits, _ := srv.Counts(); commits != 2 || authed < 6 {
		t.Errorf("server saw %d commits and %d calls with the token", commits, authed)
	}
}
