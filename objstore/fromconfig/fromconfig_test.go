package fromconfig

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/pqsink/pqsink/config"
)

func TestOpen(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := Open(ctx, "file://"+dir, &config.Store{})
	if err != nil {
		t.Fatalf("file:// with an empty store section: %v", err)
	}
	s.Close()

	// A store section built by hand has no part size: none is set, so
	// the store's default applies instead of an out-of-range zero.
	if n := len(Options("gs://b/p", &config.Store{})); n != 1 {
		t.Errorf("gs:// options of an empty section: %d, want 1 (retries)", n)
	}
	if n := len(Options("gs://b/p", &config.Store{PartSize: 8 << 20, Endpoint: "http://127.0.0.1:1"})); n != 3 {
		t.Errorf("gs:// options with endpoint and part size: %d, want 3", n)
	}
	if n := len(Options("azblob://c/p", &config.Store{MaxRetryWait: time.Minute})); n != 2 {
		t.Errorf("azblob:// options with max retry wait: %d, want 2", n)
	}
	if _, err := Open(ctx, "gs://b/p", &config.Store{MaxRetryWait: time.Hour, Endpoint: "http://127.0.0.1:1"}); err == nil || !strings.Contains(err.Error(), "max retry wait") {
		t.Errorf("a max retry wait of an hour: err = %v, want it refused", err)
	}
	if n := len(Options("file:///x", &config.Store{PartSize: 8 << 20, Endpoint: "http://e"})); n != 0 {
		t.Errorf("file:// takes no store settings, got %d options", n)
	}

	_, err = Open(ctx, "azblob://c/p?sig=secret", &config.Store{PartSize: 1})
	if err == nil {
		t.Fatal("a part size of 1 byte was accepted")
	}
	if strings.Contains(err.Error(), "secret") {
		t.Errorf("the error shows the URL's query: %v", err)
	}
}
