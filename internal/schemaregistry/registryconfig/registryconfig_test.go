package registryconfig

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pqsink/pqsink/config"
)

// TestNew: the client of a format.registry section registers through an
// https registry whose CA is the section's ca_file, with its credentials;
// a missing URL or an unusable CA file is an error naming the key.
func TestNew(t *testing.T) {
	var user, password string
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, password, _ = r.BasicAuth()
		json.NewEncoder(w).Encode(map[string]any{"id": 42})
	}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshake below
	srv.StartTLS()
	defer srv.Close()
	dir := t.TempDir()
	ca := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	notPEM := filepath.Join(dir, "not.pem")
	if err := os.WriteFile(notPEM, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		c       *config.Registry
		newErr  string // of New
		callErr bool   // of Register
	}{
		{name: "ca file", c: &config.Registry{URL: srv.URL, Username: "svc", Password: "pw", CAFile: ca}},
		{name: "system roots", c: &config.Registry{URL: srv.URL}, callErr: true},
		{name: "no section", newErr: "format.registry.url: required"},
		{name: "no url", c: &config.Registry{Username: "svc"}, newErr: "format.registry.url: required"},
		{name: "ca file missing", c: &config.Registry{URL: srv.URL, CAFile: filepath.Join(dir, "nope.pem")}, newErr: "format.registry.ca_file: open "},
		{name: "ca file not PEM", c: &config.Registry{URL: srv.URL, CAFile: notPEM}, newErr: "format.registry.ca_file " + notPEM + ": no PEM certificate in it"},
		{name: "bad scheme", c: &config.Registry{URL: "ftp://r"}, newErr: "format.registry: schema registry: URL scheme \"ftp\""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			user, password = "", ""
			reg, err := New(c.c)
			if c.newErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.newErr) {
					t.Fatalf("New: %v, want an error with %q", err, c.newErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			id, err := reg.Register(context.Background(), "t-value", `"string"`)
			if c.callErr {
				if err == nil {
					t.Fatal("Register through an untrusted certificate succeeded")
				}
				return
			}
			if err != nil || id != 42 {
				t.Fatalf("Register: %d, %v; want 42", id, err)
			}
			if user != c.c.Username || password != c.c.Password.Value() {
				t.Errorf("credentials %q:%q, want %q:%q", user, password, c.c.Username, c.c.Password.Value())
			}
		})
	}
}
