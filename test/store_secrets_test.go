package test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/sas"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/service"

	"github.com/pqsink/pqsink/internal/testutil/azurite"
	"github.com/pqsink/pqsink/internal/testutil/fakegcs"
	"github.com/pqsink/pqsink/internal/testutil/faultproxy"
	kafkatest "github.com/pqsink/pqsink/internal/testutil/kafka"
	"github.com/pqsink/pqsink/objstore"
)

// secretRun is a sink run against a store that takes a secret: the store
// section's URL and keys (the secret itself travels in the environment,
// which the test set), the secrets to look for, how to read the store back,
// and what proves that the run met failures and used the credentials.
type secretRun struct {
	storeURL, storeKeys string
	// secrets returns the secrets to look for, once check has run.
	secrets func() []string
	open    func(t *testing.T) objstore.Store
	// check fails the test unless the run went through the code paths
	// whose texts could carry the secret (failed requests, retries) with
	// the credentials in use.
	check func(t *testing.T)
}

// TestStoreSecretsHidden runs `pqsink run`, logging at debug level, into
// Google Cloud Storage with a service-account key
// (GOOGLE_APPLICATION_CREDENTIALS, through an HTTPS endpoint, so that the
// client signs its requests with it) or with the tokens of a metadata
// server (GCE_METADATA_HOST: workload identity), and into Azure Blob
// Storage with a
// shared key and with a SAS token, each time through a proxy that fails
// some requests (503, 429 with Retry-After, and for Azure connections cut
// short, whose errors quote the request's URL, SAS token included): the
// retries and their errors are logged. Neither the log, the errors in it,
// nor the /metrics page show any part of the secret: the private key, its
// id, the bearer tokens it signed, the account key, the SAS signature.
func TestStoreSecretsHidden(t *testing.T) {
	for _, c := range []struct {
		name  string
		setup func(t *testing.T) secretRun
	}{
		{"gcs service account", func(t *testing.T) secretRun { return gcsCredentialsRun(t, false) }},
		{"gcs workload identity", func(t *testing.T) secretRun { return gcsCredentialsRun(t, true) }},
		{"azure shared key", func(t *testing.T) secretRun { return azureSecretRun(t, false) }},
		{"azure SAS token", func(t *testing.T) secretRun { return azureSecretRun(t, true) }},
	} {
		t.Run(c.name, func(t *testing.T) { testStoreSecretsHidden(t, c.setup(t)) })
	}
}

func testStoreSecretsHidden(t *testing.T, run secretRun) {
	const partitions, n = 3, 3000
	topic := "secrets"
	broker := kafkatest.Start(t, partitions, topic)
	produceEvents(t, broker.Brokers, topic, 0, n)
	cfg := sinkConfig{brokers: broker.Brokers, group: "g-secrets", topic: topic, format: "json",
		storeURL: run.storeURL, storeKeys: run.storeKeys, records: 250, interval: "500ms",
		extra: "metrics:\n  listen: 127.0.0.1:0\nlog:\n  level: debug\n"}
	p := startSinkProcess(t, "secrets", cfg.yaml(t))

	// Wait for every record to be consumed and the files to land.
	p.waitLog(t, "serving metrics", time.Minute)
	m := metricsAddr.FindStringSubmatch(p.log.String())
	if m == nil {
		t.Fatal("no metrics address in the log")
	}
	metrics := func() string {
		resp, err := http.Get("http://" + m[1] + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return string(body)
	}
	s := run.open(t)
	landed := func() int {
		files := 0
		for _, err := range s.List(context.Background(), "") {
			if err != nil {
				return 0
			}
			files++
		}
		return files
	}
	want := fmt.Sprintf("pqsink_records_consumed_total %d", n)
	for deadline := time.Now().Add(2 * time.Minute); !strings.Contains(metrics(), want) || landed() < n/250; time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("after 2 minutes, %d files landed, want %d or more, and the metrics lack %q", landed(), n/250, want)
		}
	}
	page := metrics()
	p.terminate(t, 30*time.Second)
	log := p.log.String()
	run.check(t)
	if !strings.Contains(log, "retrying a store request") {
		t.Errorf("the log has no retried store request: the errors that could show a secret were not logged")
	}
	for _, secret := range run.secrets() {
		for _, form := range []string{secret, url.QueryEscape(secret)} {
			if strings.Contains(log, form) {
				i := strings.Index(log, form)
				t.Errorf("the log shows a secret, at: %s", log[max(0, i-200):min(len(log), i+len(form)+50)])
			}
			if strings.Contains(page, form) {
				t.Errorf("the /metrics page shows a secret")
			}
		}
	}
}

// gcsCredentialsRun serves fake-gcs-server over HTTPS, through a front
// that records the bearer tokens it is sent and answers 503 or 429 to some
// writes, and gives the sink a service-account key of its own, with a
// token endpoint of the test's, as GOOGLE_APPLICATION_CREDENTIALS; or,
// with metadata, no key but a metadata server of the test's
// (GCE_METADATA_HOST), which hands out the tokens of the machine's or
// pod's service account, as on GKE with workload identity.
func gcsCredentialsRun(t *testing.T, metadata bool) secretRun {
	srv := fakegcs.Start(t)
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	keyPEM := string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
	keyID := fmt.Sprintf("%x", der[len(der)-20:])
	accessToken := "ya29.pqsink-test-" + strings.Repeat("t", 20) + fmt.Sprintf("%x", der[40:56])

	var tokens atomic.Int64
	tokenSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tokens.Add(1)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"access_token":%q,"token_type":"Bearer","expires_in":3600}`, accessToken)
	}))
	t.Cleanup(tokenSrv.Close)

	// The front: HTTPS, as a private endpoint of GCS is; the sink trusts
	// its certificate through SSL_CERT_FILE.
	target, _ := url.Parse(srv.Endpoint)
	var mu sync.Mutex
	bearers := map[string]bool{}
	var requests, faults atomic.Int64
	var front *httptest.Server
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) { r.SetURL(target) },
		ModifyResponse: func(resp *http.Response) error {
			if loc := resp.Header.Get("Location"); strings.HasPrefix(loc, srv.Endpoint) {
				resp.Header.Set("Location", front.URL+strings.TrimPrefix(loc, srv.Endpoint))
			}
			return nil
		},
	}
	front = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if b, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
			mu.Lock()
			bearers[b] = true
			mu.Unlock()
		}
		if n := requests.Add(1); r.Method != http.MethodGet && n%5 == 0 {
			faults.Add(1)
			io.Copy(io.Discard, r.Body)
			status, reason := http.StatusServiceUnavailable, "backendError"
			if n%10 == 0 {
				status, reason = http.StatusTooManyRequests, "rateLimitExceeded"
				w.Header().Set("Retry-After", "1")
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			fmt.Fprintf(w, `{"error":{"code":%d,"message":"slow down","errors":[{"reason":%q}]}}`, status, reason)
			return
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)

	dir := t.TempDir()
	certFile := filepath.Join(dir, "front.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: front.Certificate().Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
	account, err := json.Marshal(map[string]string{
		"type": "service_account", "project_id": "pqsink-test",
		"private_key_id": keyID, "private_key": keyPEM,
		"client_email": "sink@pqsink-test.iam.gserviceaccount.com", "client_id": "1234567890",
		"token_uri": tokenSrv.URL + "/token",
	})
	if err != nil {
		t.Fatal(err)
	}
	credFile := filepath.Join(dir, "service-account.json")
	if err := os.WriteFile(credFile, account, 0o600); err != nil {
		t.Fatal(err)
	}
	// The sink process inherits the environment.
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", credFile)
	t.Setenv("STORAGE_EMULATOR_HOST", "")
	t.Setenv("SSL_CERT_FILE", certFile)
	if metadata {
		// Nothing but the metadata server: no key file (nor gcloud's,
		// which this machine lacks: checked below by the token count).
		t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", "")
		md := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Metadata-Flavor") != "Google" {
				http.Error(w, "missing Metadata-Flavor", http.StatusForbidden)
				return
			}
			w.Header().Set("Metadata-Flavor", "Google")
			switch {
			case strings.HasSuffix(r.URL.Path, "/token"):
				tokens.Add(1)
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprintf(w, `{"access_token":%q,"token_type":"Bearer","expires_in":3600}`, accessToken)
			case strings.HasSuffix(r.URL.Path, "/universe/universe-domain"):
				io.WriteString(w, "googleapis.com")
			case strings.HasSuffix(r.URL.Path, "/project/project-id"):
				io.WriteString(w, "pqsink-test")
			case strings.HasSuffix(r.URL.Path, "/email"):
				io.WriteString(w, "sink@pqsink-test.iam.gserviceaccount.com")
			case r.URL.Path == "/" || r.URL.Path == "/computeMetadata/v1/" || r.URL.Path == "/computeMetadata/v1":
				io.WriteString(w, "computeMetadata/")
			default:
				http.NotFound(w, r)
			}
		}))
		t.Cleanup(md.Close)
		t.Setenv("GCE_METADATA_HOST", strings.TrimPrefix(md.URL, "http://"))
	}

	bucket := srv.NewBucket()
	// The key's PEM body, line by line: no line of it may show.
	secrets := []string{keyID, accessToken}
	for _, line := range strings.Split(keyPEM, "\n") {
		if len(line) >= 32 && !strings.HasPrefix(line, "-----") {
			secrets = append(secrets, line)
		}
	}
	return secretRun{
		storeURL:  fmt.Sprintf("gs://%s/raw", bucket),
		storeKeys: fmt.Sprintf("  endpoint: %s\n  max_retry_wait: 200ms\n", front.URL),
		secrets:   func() []string { return secrets },
		open: func(t *testing.T) objstore.Store {
			return openStore(t, fmt.Sprintf("gs://%s/raw", bucket), objstore.Endpoint(srv.Endpoint))
		},
		check: func(t *testing.T) {
			mu.Lock()
			defer mu.Unlock()
			if len(bearers) == 0 {
				t.Errorf("the front saw no bearer token: the sink did not sign with the service account")
			}
			if metadata && (tokens.Load() == 0 || !bearers[accessToken]) {
				t.Errorf("the metadata server handed out %d tokens, and the front saw %d bearer tokens (the metadata server's among them: %v)",
					tokens.Load(), len(bearers), bearers[accessToken])
			}
			for b := range bearers {
				// A self-signed JWT or the token endpoint's access
				// token: either signs requests for an hour.
				secrets = append(secrets, b)
			}
			if faults.Load() == 0 {
				t.Errorf("the front failed no request")
			}
			t.Logf("front: %d requests, %d failed, %d bearer tokens; token endpoint: %d requests",
				requests.Load(), faults.Load(), len(bearers), tokens.Load())
		},
	}
}

// azureSecretRun runs Azurite behind a faultproxy and gives the sink the
// account's shared key, or a SAS token signed with it.
func azureSecretRun(t *testing.T, useSAS bool) secretRun {
	srv := azurite.Start(t)
	base := strings.TrimSuffix(srv.Endpoint, "/"+srv.Account)
	proxy := faultproxy.StartFor(t, base, 7, faultproxy.AzureOperation)
	container := srv.NewContainer(t)
	secrets := []string{srv.Key}
	t.Setenv(objstore.EnvAzureAccount, srv.Account)
	t.Setenv(objstore.EnvAzureKey, srv.Key)
	t.Setenv(objstore.EnvAzureSASToken, "")
	if useSAS {
		cred, err := service.NewSharedKeyCredential(srv.Account, srv.Key)
		if err != nil {
			t.Fatal(err)
		}
		q, err := sas.AccountSignatureValues{
			Protocol:      sas.ProtocolHTTPSandHTTP,
			ExpiryTime:    time.Now().Add(time.Hour),
			Permissions:   (&sas.AccountPermissions{Read: true, Write: true, Delete: true, List: true, Create: true}).String(),
			ResourceTypes: (&sas.AccountResourceTypes{Container: true, Object: true}).String(),
		}.SignWithSharedKey(cred)
		if err != nil {
			t.Fatal(err)
		}
		t.Setenv(objstore.EnvAzureKey, "")
		t.Setenv(objstore.EnvAzureSASToken, q.Encode())
		secrets = append(secrets, q.Signature(), q.Encode())
	}
	proxy.SetRetryAfter("1")
	proxy.SetRates(faultproxy.Rates{Error503: 0.1, Error429: 0.1, DropBefore: 0.05})
	// Connections cut short, whose errors quote the request's URL, at
	// least a few whatever the draws.
	for _, op := range []faultproxy.Op{faultproxy.PutObject, faultproxy.ListObjects} {
		proxy.Inject(op, faultproxy.DropBefore, 2)
	}
	storeURL := fmt.Sprintf("azblob://%s/raw", container)
	return secretRun{
		storeURL:  storeURL,
		storeKeys: fmt.Sprintf("  endpoint: %s/%s\n  max_retry_wait: 200ms\n", proxy.URL, srv.Account),
		secrets:   func() []string { return secrets },
		open: func(t *testing.T) objstore.Store {
			return openStore(t, storeURL, objstore.Endpoint(srv.Endpoint))
		},
		check: func(t *testing.T) {
			for _, f := range []faultproxy.Fault{faultproxy.Error503, faultproxy.Error429, faultproxy.DropBefore} {
				if proxy.Count("", f) == 0 {
					t.Errorf("the proxy injected no %s", f)
				}
			}
			t.Logf("proxy:\n%s", proxy)
		},
	}
}
