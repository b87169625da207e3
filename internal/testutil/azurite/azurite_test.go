package azurite

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
)

func TestServer(t *testing.T) {
	srv := Start(t)
	name := srv.NewContainer(t)
	ctx := context.Background()
	client := srv.Client(t)
	body := []byte("hello, azurite")
	if _, err := client.UploadBuffer(ctx, name, "a/b.txt", body, nil); err != nil {
		t.Fatalf("upload: %v", err)
	}
	resp, err := client.DownloadStream(ctx, name, "a/b.txt", nil)
	if err != nil {
		t.Fatalf("download: %v", err)
	}
	got, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || !bytes.Equal(got, body) {
		t.Errorf("download = %q, %v; want %q", got, err, body)
	}

	// The account's key is enforced: another key is refused.
	bad := *srv
	bad.Key = strings.Repeat("A", 86) + "==" // 64 zero bytes
	_, err = bad.Client(t).DownloadStream(ctx, name, "a/b.txt", nil)
	var re *azcore.ResponseError
	if !errors.As(err, &re) || re.StatusCode != http.StatusForbidden {
		t.Errorf("download with a wrong key: err = %v, want 403", err)
	}
}

func TestServersAreIsolated(t *testing.T) {
	a, b := Start(t), Start(t)
	if a.Endpoint == b.Endpoint || a.Account == b.Account || a.Key == b.Key {
		t.Fatalf("two servers share endpoint or account: %s %s", a.Endpoint, b.Endpoint)
	}
	name := a.NewContainer(t)
	if _, err := b.Container(t, name).GetProperties(context.Background(), nil); err == nil {
		t.Errorf("container %s of server A is visible on server B", name)
	}
}

func TestStopOnCleanup(t *testing.T) {
	var endpoint string
	t.Run("server", func(t *testing.T) {
		endpoint = Start(t).Endpoint
	})
	// The subtest's cleanup has run: nothing answers any more.
	client := &http.Client{Timeout: time.Second}
	if resp, err := client.Get(endpoint + "?comp=list"); err == nil {
		resp.Body.Close()
		t.Errorf("server at %s still answers after its test ended", endpoint)
	}
}

func TestNotProvisioned(t *testing.T) {
	_, err := mainScript(t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "provision.sh") {
		t.Errorf("mainScript in a tree without Azurite: err = %v, want a hint naming provision.sh", err)
	}
}
