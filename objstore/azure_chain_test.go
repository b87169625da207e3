package objstore

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
)

// TestAzureDefaultChain: with neither a key nor a SAS token, a store
// signs with the default Azure credential chain, here reaching managed
// identity as App Service and Container Apps offer it (IDENTITY_ENDPOINT,
// an HTTP endpoint on the host, and IDENTITY_HEADER, a secret that the
// request must carry), played by a server of the test that refuses to
// hand out a token. The chain's failure is the store's error: one line,
// naming the chain and the credential that failed, and showing none of
// the secrets in the environment.
func TestAzureDefaultChain(t *testing.T) {
	const identityHeader = "identity-header-s3cr3t"
	const clientSecret = "client-secret-s3cr3t"
	var asked atomic.Int64
	identity := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if r.Header.Get("X-IDENTITY-HEADER") != identityHeader {
			t.Errorf("token request without the identity header: %v", r.Header)
		}
		if got := r.URL.Query().Get("resource"); got != "https://storage.azure.com" {
			t.Errorf("token asked for resource %q, want https://storage.azure.com", got)
		}
		asked.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, `{"error":"invalid_request","error_description":"no identity is assigned to this resource"}`)
	}))
	defer identity.Close()
	// Unset, not empty: the SDK takes an empty AZURE_CLIENT_ID for a
	// user-assigned identity's.
	for _, env := range []string{EnvAzureKey, EnvAzureSASToken,
		"AZURE_TENANT_ID", "AZURE_CLIENT_ID", "AZURE_FEDERATED_TOKEN_FILE", "AZURE_CLIENT_CERTIFICATE_PATH",
		"AZURE_USERNAME", "MSI_ENDPOINT", "MSI_SECRET", "IMDS_ENDPOINT", "IDENTITY_SERVER_THUMBPRINT"} {
		t.Setenv(env, "") // restored when the test ends
		os.Unsetenv(env)
	}
	// A client secret without a tenant leaves the environment credential
	// out of the chain; its value must not show anyway.
	t.Setenv("AZURE_CLIENT_SECRET", clientSecret)
	// The chain's production half: no developer tools (az, azd) tried,
	// whatever this machine has.
	t.Setenv("AZURE_TOKEN_CREDENTIALS", "prod")
	t.Setenv("IDENTITY_ENDPOINT", identity.URL+"/msi/token")
	t.Setenv("IDENTITY_HEADER", identityHeader)

	if got := azureCreds(t, "https://acct.blob.core.windows.net", "c"); got != "default chain" {
		t.Fatalf("credentials %q, want default chain", got)
	}
	s, err := Open(context.Background(), "azblob://c/p", Endpoint("https://acct.blob.core.windows.net"), MaxRetries(2))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// The token comes before any request to the account, which this
	// machine could not reach: the test's server is all the chain meets.
	_, err = s.Head(context.Background(), "k")
	noSecret(t, err, identityHeader, clientSecret)
	for _, want := range []string{"azblob://c/p/k", "DefaultAzureCredential", "ManagedIdentityCredential", "400"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not say %q: %v", want, err)
		}
	}
	if asked.Load() == 0 {
		t.Error("the chain never asked the managed identity endpoint for a token")
	}
}

func TestOneLine(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain", "plain"},
		{"DefaultAzureCredential: failed to acquire a token.\nAttempted credentials:\n\tEnvironmentCredential: missing\n\tManagedIdentityCredential: refused",
			"DefaultAzureCredential: failed to acquire a token. Attempted credentials: EnvironmentCredential: missing; ManagedIdentityCredential: refused"},
		{"failed:\n----------\nRESPONSE 400\n----------\n", "failed: RESPONSE 400"},
	}
	for _, tt := range tests {
		if got := oneLine(tt.in); got != tt.want {
			t.Errorf("oneLine(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
