package objstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/sas"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/service"

	"github.com/pqsink/pqsink/internal/testutil/azurite"
)

// What these tests check against Azurite only, since no test here reaches
// the real service (docs/configuration.md lists it too):
//   - that Azure refuses a Put Blob or a Put Block List with If-None-Match: *
//     over an existing blob. Azurite (3.37) enforces it, and
//     TestAzuritePreconditions pins that, with the status it answers;
//     TestAzureSendsCondition checks that every request of the store that
//     creates a blob carries the condition, which is what the real
//     service's documented behaviour rests on. Either answer, 409
//     BlobAlreadyExists or 412 ConditionNotMet, is ErrExists;
//   - that staged blocks never committed leave nothing visible, and that
//     committing a name discards the other uncommitted blocks under it
//     (Azurite keeps them per blob, as the service does; it does not
//     expire them after a week, which no test could wait for anyway);
//   - the retries on 503, which a proxy answers on purpose to the first
//     attempt of every request (TestAzureRetries);
//   - SAS tokens: Azurite checks an account SAS's signature; the default
//     credential chain (Microsoft Entra tokens) is not tested, since
//     Azurite takes tokens only over HTTPS with a certificate of its own.

// azureEnv sets the shared-key credentials of srv in the environment,
// as a user would, and clears the others.
func azureEnv(t testing.TB, srv *azurite.Server) {
	t.Setenv(EnvAzureAccount, srv.Account)
	t.Setenv(EnvAzureKey, srv.Key)
	t.Setenv(EnvAzureSASToken, "")
}

// openAzurite opens a store on a fresh container of srv, reached at
// endpoint (srv's, or a proxy's), under a key prefix so that prefix
// handling is exercised by every test, with blocks of testPartSize.
func openAzurite(t testing.TB, srv *azurite.Server, endpoint string, opts ...Option) (Store, string) {
	t.Helper()
	name := srv.NewContainer(t)
	return openAzureContainer(t, endpoint, name, opts...), name
}

func openAzureContainer(t testing.TB, endpoint, name string, opts ...Option) Store {
	t.Helper()
	u := fmt.Sprintf("azblob://%s/pre/fix?part_size=%d", name, testPartSize)
	s, err := Open(context.Background(), u, append([]Option{Endpoint(endpoint)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestAzureStore(t *testing.T) {
	srv := azurite.Start(t)
	azureEnv(t, srv)
	testStore(t, backend{
		name: "azure",
		open: func(t *testing.T, opts ...Option) Store {
			s, _ := openAzurite(t, srv, srv.Endpoint, opts...)
			return s
		},
		// Azure shows no unfinished upload: staged blocks hold no name.
		// What the tests check with pending, that nothing is left, they
		// also check with Head and List.
		pending:          func(*testing.T, Store, string) []string { return nil },
		invisibleUploads: true,
		startUpload: func(t *testing.T, s Store, key string) {
			// A writer that dies with blocks staged and never committed.
			ctx, cancel := context.WithCancel(context.Background())
			up, err := s.Create(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			writeChunks(t, up, payload(2*testPartSize+1, 9), 1<<20)
			au := up.(*azureUpload)
			if err := au.wait(ctx); err != nil {
				t.Fatal(err)
			}
			if err := au.failure(); err != nil {
				t.Fatalf("staging blocks: %v", err)
			}
			blocks := uncommitted(t, au.s, key)
			cancel()
			up.Abort(context.Background())
			if blocks != 2 {
				t.Fatalf("%d uncommitted blocks staged for %s, want 2", blocks, key)
			}
		},
	})
}

// uncommitted returns the number of uncommitted blocks under key.
func uncommitted(t testing.TB, s *azureStore, key string) int {
	t.Helper()
	resp, err := s.client.NewBlockBlobClient(s.prefix+key).GetBlockList(context.Background(), blockblob.BlockListTypeUncommitted, nil)
	if err != nil {
		t.Fatalf("block list of %s: %v", key, err)
	}
	return len(resp.UncommittedBlocks)
}

// TestAzuritePreconditions pins the emulator behaviour that the store's
// create-if-absent rests on, with plain SDK calls: Put Blob and Put Block
// List with If-None-Match: * over an existing blob are refused, and the
// blob stays as it was.
func TestAzuritePreconditions(t *testing.T) {
	srv := azurite.Start(t)
	name := srv.NewContainer(t)
	ctx := context.Background()
	bb := srv.Container(t, name).NewBlockBlobClient("k")
	cond := azureIfAbsent()
	if _, err := bb.Upload(ctx, streaming.NopCloser(strings.NewReader("first")), &blockblob.UploadOptions{AccessConditions: cond}); err != nil {
		t.Fatalf("first conditional Put Blob: %v", err)
	}
	_, err := bb.Upload(ctx, streaming.NopCloser(strings.NewReader("second")), &blockblob.UploadOptions{AccessConditions: cond})
	if !errors.Is(azureError(err), ErrExists) {
		t.Errorf("Put Blob over an existing blob: %v, want ErrExists", err)
	}
	t.Logf("Azurite answers a refused Put Blob with %v", azureError(err))
	id := "YmxvY2stMDAwMDAx"
	if _, err := bb.StageBlock(ctx, id, streaming.NopCloser(strings.NewReader("third")), nil); err != nil {
		t.Fatal(err)
	}
	_, err = bb.CommitBlockList(ctx, []string{id}, &blockblob.CommitBlockListOptions{AccessConditions: cond})
	if !errors.Is(azureError(err), ErrExists) {
		t.Errorf("Put Block List over an existing blob: %v, want ErrExists", err)
	}
	t.Logf("Azurite answers a refused Put Block List with %v", azureError(err))
	resp, err := bb.DownloadStream(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if got, _ := io.ReadAll(resp.Body); string(got) != "first" {
		t.Errorf("blob = %q after refused writes, want %q", got, "first")
	}

	// Where Azurite differs from the service: a name with only
	// uncommitted blocks does not exist (404, as on the service), yet
	// Azurite refuses a conditional Put Blob over it, which the service
	// takes (it discards the blocks). The store's Put Blob falls back to
	// a block list commit then; if a later Azurite takes the Put Blob,
	// this fails, and the fallback is dead code on the emulator too.
	// (A crashed upload's block, with an id as long as the store's: all
	// the blocks of a name must have ids of one length.)
	ub := srv.Container(t, name).NewBlockBlobClient("u")
	crashed := (&azureUpload{nonce: strings.Repeat("c", 16)}).blockID(0)
	if _, err := ub.StageBlock(ctx, crashed, streaming.NopCloser(strings.NewReader("staged")), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := ub.GetProperties(ctx, nil); !errors.Is(azureError(err), ErrNotExist) {
		t.Errorf("a name with only uncommitted blocks: GetProperties err = %v, want 404", err)
	}
	_, err = ub.Upload(ctx, streaming.NopCloser(strings.NewReader("x")), &blockblob.UploadOptions{AccessConditions: cond})
	if !errors.Is(azureError(err), ErrExists) {
		t.Errorf("Azurite took a conditional Put Blob over uncommitted blocks (err = %v): the service's behaviour; update this test and the store's comment", err)
	}
	t.Setenv(EnvAzureAccount, srv.Account)
	t.Setenv(EnvAzureKey, srv.Key)
	s, err := Open(ctx, "azblob://"+name, Endpoint(srv.Endpoint))
	if err != nil {
		t.Fatal(err)
	}
	create(t, s, "u", []byte("the store's"))
	if got, _ := readAll(t, s, "u"); string(got) != "the store's" {
		t.Errorf("u = %q, want the store's object", got)
	}
}

// TestAzureSendsCondition checks what the real service's create-if-absent
// needs from the client: every request that creates a blob, Put Blob or
// Put Block List, carries If-None-Match: *.
func TestAzureSendsCondition(t *testing.T) {
	srv := azurite.Start(t)
	azureEnv(t, srv)
	proxy := srv.Proxy(t, nil)
	s, _ := openAzurite(t, srv, proxy.Endpoint)
	defer s.Close()
	for i, n := range []int{0, 10, testPartSize, testPartSize + 1, 3*testPartSize + 7} {
		if _, err := stream(t, s, fmt.Sprintf("k%d", i), payload(n, uint64(i)), 1<<20); err != nil {
			t.Fatal(err)
		}
	}
	ops := map[string]int{}
	for _, r := range proxy.Requests() {
		if r.Method != http.MethodPut {
			continue
		}
		q, err := url.ParseQuery(r.Query)
		if err != nil {
			t.Fatal(err)
		}
		op := azureOperation(&http.Request{Method: r.Method, URL: &url.URL{RawQuery: r.Query}})
		ops[op]++
		if q.Get("comp") == "block" {
			continue // staging, which creates nothing
		}
		if r.IfNoneMatch != "*" {
			t.Errorf("%s %s?%s without If-None-Match: *", op, r.Path, r.Query)
		}
	}
	// Three objects of at most a block, two of several blocks (2 and 4).
	if ops["PutBlob"] != 3 || ops["PutBlockList"] != 2 || ops["PutBlock"] != 6 {
		t.Errorf("write requests by operation = %v, want 3 PutBlob, 2 PutBlockList, 6 PutBlock", ops)
	}
}

// TestAzureUploadBuffers: an upload holds at most Concurrency+1 block
// buffers, and every one of them comes back, on every path.
func TestAzureUploadBuffers(t *testing.T) {
	srv := azurite.Start(t)
	azureEnv(t, srv)
	ctx := context.Background()
	pool := newCountingPool(-1)
	s, _ := openAzurite(t, srv, srv.Endpoint, Buffers(pool), Concurrency(1))
	defer s.Close()
	for _, n := range []int{0, 1, testPartSize, testPartSize + 1, 5*testPartSize + 13} {
		data := payload(n, uint64(n))
		key := fmt.Sprintf("r/%d", n)
		if _, err := stream(t, s, key, data, 7919, 1<<20); err != nil {
			t.Fatalf("%d bytes: %v", n, err)
		}
		if got, _ := readAll(t, s, key); !bytes.Equal(got, data) {
			t.Errorf("%d bytes: read back %d bytes that differ", n, len(got))
		}
	}
	// A refused commit and an abort, both of several blocks.
	if _, err := stream(t, s, "r/1", payload(2*testPartSize, 1), 1<<20); !errors.Is(err, ErrExists) {
		t.Errorf("second upload of r/1: err = %v, want ErrExists", err)
	}
	up, err := s.Create(ctx, "r/aborted")
	if err != nil {
		t.Fatal(err)
	}
	writeChunks(t, up, payload(2*testPartSize+1, 2), 1<<20)
	if err := up.Abort(ctx); err != nil {
		t.Fatal(err)
	}
	if st := pool.stats(t); st.peak > 2 {
		t.Errorf("peak block buffers out = %d, want at most 2 (one staging, one filling)", st.peak)
	}

	// A pool that never lends: Write waits for it within the Create
	// context, and the upload leaves nothing.
	s0, _ := openAzurite(t, srv, srv.Endpoint, Buffers(newCountingPool(0)))
	defer s0.Close()
	cctx, cancel := context.WithCancel(ctx)
	up, err = s0.Create(cctx, "b/k")
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	if _, err := up.Write([]byte("x")); !errors.Is(err, context.Canceled) {
		t.Errorf("Write with no buffer to be had: err = %v, want context.Canceled", err)
	}
	up.Abort(ctx)
	if _, err := s0.Head(ctx, "b/k"); !errors.Is(err, ErrNotExist) {
		t.Errorf("Head: err = %v, want ErrNotExist", err)
	}
}

// TestAzureTwoOwners: two uploads of one key in flight at once, as a
// fenced owner and its successor would run them; whichever commits first
// wins, the other gets ErrExists, in every order and size, and the
// loser's staged blocks never mix into the winner's blob.
func TestAzureTwoOwners(t *testing.T) {
	srv := azurite.Start(t)
	azureEnv(t, srv)
	s, _ := openAzurite(t, srv, srv.Endpoint)
	defer s.Close()
	ctx := context.Background()
	for _, n := range []int{10, 3*testPartSize + 1} {
		for _, firstWins := range []bool{true, false} {
			key := fmt.Sprintf("owners/%d-%t", n, firstWins)
			a, err := s.Create(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			b, err := s.Create(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			// Interleaved: both stage their blocks under the same name.
			writeChunks(t, a, payload(n, 1), 1<<20)
			writeChunks(t, b, payload(n, 2), 1<<20)
			winner, loser, want := b, a, payload(n, 2)
			if firstWins {
				winner, loser, want = a, b, payload(n, 1)
			}
			if _, err := winner.Commit(ctx); err != nil {
				t.Fatalf("%s: first Commit: %v", key, err)
			}
			if _, err := loser.Commit(ctx); !errors.Is(err, ErrExists) {
				t.Errorf("%s: second Commit: err = %v, want ErrExists", key, err)
			}
			loser.Abort(ctx)
			if got, _ := readAll(t, s, key); !bytes.Equal(got, want) {
				t.Errorf("%s: the object is not the first committer's", key)
			}
		}
	}
}

func TestAzureReaderAtSeesReplacement(t *testing.T) {
	srv := azurite.Start(t)
	azureEnv(t, srv)
	s, _ := openAzurite(t, srv, srv.Endpoint)
	defer s.Close()
	ctx := context.Background()
	create(t, s, "k", []byte("version one"))
	r, err := s.NewReaderAt(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	create(t, s, "k", []byte("version two"))
	if _, err := r.ReadAt(make([]byte, 4), 0); err == nil || !strings.Contains(err.Error(), "changed") {
		t.Errorf("ReadAt after replacement: err = %v, want 'object changed'", err)
	}
}

func TestAzurePrefixAndPaging(t *testing.T) {
	srv := azurite.Start(t)
	azureEnv(t, srv)
	s, name := openAzurite(t, srv, srv.Endpoint)
	defer s.Close()
	ctx := context.Background()
	c := srv.Container(t, name)
	put := func(blobName string) {
		if _, err := c.NewBlockBlobClient(blobName).UploadBuffer(ctx, []byte("y"), nil); err != nil {
			t.Fatal(err)
		}
	}
	// Blobs beside the prefix are not the store's.
	for _, k := range []string{"pre/fixed", "pre/other", "a/b"} {
		put(k)
	}
	const n = 23
	want := make([]string, n)
	for i := range n {
		want[i] = fmt.Sprintf("many/%05d", i)
		put("pre/fix/" + want[i])
	}
	s.(*azureStore).listPageSize = 10
	got := listKeys(t, s, "")
	if len(got) != n {
		t.Fatalf("List returned %d keys, want %d: %q", len(got), n, got)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("List key %d = %q, want %q", i, got[i], want[i])
		}
	}
}

// TestAzureRetries has a proxy answer 503 to the first attempt of every
// request: reads, Put Blob, Put Block and Put Block List are retried, the
// hook hears of it, and each object lands once, whole.
func TestAzureRetries(t *testing.T) {
	srv := azurite.Start(t)
	azureEnv(t, srv)
	var mu sync.Mutex
	failed := map[string]bool{} // a request's method, path and query: failed once already
	proxy := srv.Proxy(t, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			op := r.Method + " " + r.URL.Path + "?" + r.URL.RawQuery
			mu.Lock()
			fail := !failed[op]
			failed[op] = true
			mu.Unlock()
			if fail {
				io.Copy(io.Discard, r.Body)
				w.Header().Set("x-ms-error-code", "ServerBusy")
				w.WriteHeader(http.StatusServiceUnavailable)
				return
			}
			next.ServeHTTP(w, r)
		})
	})
	var hookMu sync.Mutex
	heard := map[string]int{} // "op attempt" -> calls
	name := srv.NewContainer(t)
	s := openAzureContainer(t, proxy.Endpoint, name, OnRetry(func(op string, attempt int, err error) {
		hookMu.Lock()
		defer hookMu.Unlock()
		heard[fmt.Sprintf("%s %d", op, attempt)]++
		if err == nil || !strings.Contains(err.Error(), "503") {
			t.Errorf("OnRetry(%s, %d) got err %v, want the 503", op, attempt, err)
		}
	}))
	defer s.Close()
	for i, n := range []int{10, 2*testPartSize + 3} {
		key := fmt.Sprintf("k%d", i)
		data := payload(n, uint64(i))
		if _, err := stream(t, s, key, data, 1<<20); err != nil {
			t.Fatalf("%d bytes through failing requests: %v", n, err)
		}
		if got, _ := readAll(t, s, key); !bytes.Equal(got, data) {
			t.Errorf("%d bytes: read back %d bytes that differ", n, len(got))
		}
	}
	want := map[string]int{"PutBlob 1": 1, "PutBlock 1": 3, "PutBlockList 1": 1, "GetBlob 1": 2}
	for k, v := range want {
		if heard[k] != v {
			t.Errorf("OnRetry heard %q %d times, want %d; heard %v", k, heard[k], v, heard)
		}
	}

	// With no retries allowed, the first 503 fails the upload, which
	// leaves nothing.
	s0 := openAzureContainer(t, proxy.Endpoint, name, MaxRetries(0))
	defer s0.Close()
	for _, n := range []int{1, 2*testPartSize + 3} {
		key := fmt.Sprintf("fresh-%d", n)
		if _, err := Put(context.Background(), s0, key, bytes.NewReader(payload(n, 5))); err == nil || errors.Is(err, ErrExists) || !strings.Contains(err.Error(), "503") {
			t.Errorf("%d bytes through a 503 without retries: err = %v, want the 503", n, err)
		}
		if _, err := s.Head(context.Background(), key); !errors.Is(err, ErrNotExist) {
			t.Errorf("after a failed upload of %d bytes, Head: err = %v, want ErrNotExist", n, err)
		}
	}
}

// TestAzureSAS: a store signed with an account SAS token from
// AZURE_STORAGE_SAS_TOKEN works, and neither the token's signature nor
// the shared key shows in any error, through a response error or a
// broken connection.
func TestAzureSAS(t *testing.T) {
	srv := azurite.Start(t)
	name := srv.NewContainer(t)
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
	token := q.Encode()
	sig := q.Signature()
	t.Setenv(EnvAzureAccount, "")
	t.Setenv(EnvAzureKey, "")
	t.Setenv(EnvAzureSASToken, token)
	s := openAzureContainer(t, srv.Endpoint, name)
	defer s.Close()
	if got := azureCreds(t, srv.Endpoint, name); got != "SAS token" {
		t.Errorf("credentials = %q, want SAS token", got)
	}
	create(t, s, "k", []byte("through a SAS"))
	if got, _ := readAll(t, s, "k"); string(got) != "through a SAS" {
		t.Errorf("read back %q", got)
	}

	// A response error (409) and a broken connection (a closed port).
	_, err = stream(t, s, "k", []byte("again"), 1<<20)
	noSecret(t, err, sig, srv.Key)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + l.Addr().String() + "/" + srv.Account
	l.Close()
	sd := openAzureContainer(t, dead, name, MaxRetries(0))
	_, err = sd.Head(context.Background(), "k")
	noSecret(t, err, sig, srv.Key)

	// A wrong shared key: refused, and the key is nowhere in the error.
	t.Setenv(EnvAzureSASToken, "")
	t.Setenv(EnvAzureKey, strings.Repeat("A", 86)+"==")
	sk := openAzureContainer(t, srv.Endpoint, name, MaxRetries(0))
	_, err = sk.Head(context.Background(), "k")
	noSecret(t, err, sig, strings.Repeat("A", 86))
	var re *azcore.ResponseError
	if !errors.As(err, &re) || re.StatusCode != http.StatusForbidden {
		t.Errorf("Head with a wrong key: %v, want 403", err)
	}
}

// noSecret fails the test unless err is an error that shows none of
// secrets, in one line.
func noSecret(t *testing.T, err error, secrets ...string) {
	t.Helper()
	if err == nil {
		t.Fatal("no error")
	}
	msg := err.Error()
	for _, s := range secrets {
		for _, form := range []string{s, url.QueryEscape(s)} {
			if strings.Contains(msg, form) {
				t.Errorf("the error shows a secret: %s", msg)
			}
		}
	}
	if strings.Contains(msg, "\n") {
		t.Errorf("the error runs over several lines: %q", msg)
	}
	t.Logf("error: %v", err)
}

// azureCreds returns which credentials a store opened now would sign with.
func azureCreds(t *testing.T, endpoint, name string) azureCredentials {
	t.Helper()
	accountURL, account, err := azureAccountURL(endpoint, "", "")
	if err != nil {
		t.Fatal(err)
	}
	kind, _, err := azureClient(accountURL+"/"+name, account, nil)
	if err != nil {
		t.Fatal(err)
	}
	return kind
}

func TestAzureCredentialChoice(t *testing.T) {
	const endpoint = "https://acct.blob.core.windows.net"
	t.Setenv(EnvAzureAccount, "")
	t.Setenv(EnvAzureKey, "a2V5")
	t.Setenv(EnvAzureSASToken, "sv=2024-01-01&sig=c2ln")
	if got := azureCreds(t, endpoint, "c"); got != "shared key" {
		t.Errorf("with a key and a SAS token: %q, want shared key", got)
	}
	t.Setenv(EnvAzureKey, "")
	if got := azureCreds(t, endpoint, "c"); got != "SAS token" {
		t.Errorf("with a SAS token: %q, want SAS token", got)
	}
	t.Setenv(EnvAzureSASToken, "")
	if got := azureCreds(t, endpoint, "c"); got != "default chain" {
		t.Errorf("with neither: %q, want default chain", got)
	}
	t.Setenv(EnvAzureSASToken, "not a token")
	if _, _, err := azureClient(endpoint+"/c", "acct", nil); err == nil || strings.Contains(err.Error(), "not a token") {
		t.Errorf("a malformed SAS token: err = %v, want an error that does not quote it", err)
	}
}

func TestAzureAccountURL(t *testing.T) {
	tests := []struct {
		endpoint, accountHost, env string
		wantURL, wantAccount       string
		wantErr                    string
	}{
		{"http://127.0.0.1:10000/devstoreaccount1", "", "", "http://127.0.0.1:10000/devstoreaccount1", "devstoreaccount1", ""},
		{"http://127.0.0.1:10000/devstoreaccount1/", "", "other", "http://127.0.0.1:10000/devstoreaccount1", "other", ""},
		{"https://acct.blob.core.windows.net", "", "", "https://acct.blob.core.windows.net", "acct", ""},
		{"https://acct.privatelink.blob.core.windows.net/", "", "acct", "https://acct.privatelink.blob.core.windows.net", "acct", ""},
		{"", "acct.blob.core.windows.net", "", "https://acct.blob.core.windows.net", "acct", ""},
		{"", "acct.blob.core.windows.net", "other", "", "", "names account"},
		{"", "", "acct", "https://acct.blob.core.windows.net", "acct", ""},
		{"", "", "", "", "", "no storage account"},
		{"http://h/a?sv=1&sig=secret", "", "", "", "", "without a query"},
		{"http://h/a/b", "", "", "", "", "want the account's URL"},
	}
	for _, tt := range tests {
		u, a, err := azureAccountURL(tt.endpoint, tt.accountHost, tt.env)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || strings.Contains(err.Error(), "secret") {
				t.Errorf("azureAccountURL(%q, %q, %q): err = %v, want %q", tt.endpoint, tt.accountHost, tt.env, err, tt.wantErr)
			}
			continue
		}
		if err != nil || u != tt.wantURL || a != tt.wantAccount {
			t.Errorf("azureAccountURL(%q, %q, %q) = %q, %q, %v; want %q, %q", tt.endpoint, tt.accountHost, tt.env, u, a, err, tt.wantURL, tt.wantAccount)
		}
	}
}

func TestAzureOpenErrors(t *testing.T) {
	t.Setenv(EnvAzureAccount, "acct")
	t.Setenv(EnvAzureKey, "")
	t.Setenv(EnvAzureSASToken, "")
	tests := []struct {
		url  string
		opts []Option
		want string
	}{
		{"azblob:///prefix", nil, "the container is missing"},
		{"azblob://c:10000/p", nil, "has no port"},
		{"azblob://user:secret@c/p", nil, "no user part"},
		{"azblob://c?region=x", nil, `unknown parameter "region"`},
		{"azblob://c?part_size=1024", nil, "part size 1024"},
		{"azblob://c?endpoint=localhost:10000", nil, "endpoint"},
		{"azblob://c", []Option{Region("us")}, "option Region applies only to s3"},
		{"azblob://c", []Option{ConditionalWrites(false)}, "option ConditionalWrites applies only to s3"},
		{"azblob://c", []Option{StaticCredentials("a", "secret", "")}, "option StaticCredentials applies only to s3"},
		{"abfss://acct.dfs.core.windows.net/p", nil, "the container is missing"},
		{"abfss://c:secret@acct.dfs.core.windows.net/p", nil, "no password"},
		{"abfss://c@acct.blob.core.windows.net/p", nil, "not an account's dfs endpoint"},
		{"abfss://c@other.dfs.core.windows.net/p", nil, "names account"},
	}
	for _, tt := range tests {
		s, err := Open(context.Background(), tt.url, tt.opts...)
		if err == nil {
			s.Close()
			t.Errorf("Open(%q) succeeded, want an error containing %q", tt.url, tt.want)
			continue
		}
		if !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Open(%q): %v, want an error containing %q", tt.url, err, tt.want)
		}
		if strings.Contains(err.Error(), "secret") {
			t.Errorf("Open(%q): the error shows the secret: %v", tt.url, err)
		}
	}
}

// TestAzureABFSS: an abfss:// URL names the container and the account;
// with an endpoint (here Azurite's), the blobs go there.
func TestAzureABFSS(t *testing.T) {
	srv := azurite.Start(t)
	azureEnv(t, srv)
	name := srv.NewContainer(t)
	u := fmt.Sprintf("abfss://%s@%s.dfs.core.windows.net/tables/t1", name, srv.Account)
	s, err := Open(context.Background(), u, Endpoint(srv.Endpoint))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	create(t, s, "k", []byte("abfss"))
	if _, err := srv.Container(t, name).NewBlobClient("tables/t1/k").GetProperties(context.Background(), nil); err != nil {
		t.Errorf("blob not in the container under the prefix: %v", err)
	}
}
