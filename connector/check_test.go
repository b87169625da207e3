package connector

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/pqsink/pqsink/config"
	"github.com/pqsink/pqsink/connector/health"
)

// TestListOneFileStore: the readiness listing passes on a file:// store
// with nothing under the probe key (whose folder does not exist), so that
// a healthy file:// sink is ready.
func TestListOneFileStore(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	st, err := openStore(context.Background(), &config.Store{URL: "file://" + dir}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := health.ListOne(context.Background(), st); err != nil {
		t.Fatalf("an empty store: %v", err)
	}
}
