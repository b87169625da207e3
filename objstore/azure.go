package objstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
)

// The environment variables that hold an azblob:// store's credentials.
const (
	// EnvAzureAccount names the storage account (AZURE_STORAGE_ACCOUNT).
	EnvAzureAccount = "AZURE_STORAGE_ACCOUNT"
	// EnvAzureKey is the account's shared key (AZURE_STORAGE_KEY).
	EnvAzureKey = "AZURE_STORAGE_KEY"
	// EnvAzureSASToken is a shared access signature, the query string of
	// a SAS URL without its "?" (AZURE_STORAGE_SAS_TOKEN).
	EnvAzureSASToken = "AZURE_STORAGE_SAS_TOKEN"
)

// azureMaxBlocks is the most blocks a block blob can have.
const azureMaxBlocks = 50000

// azureStore keeps objects under a key prefix of one Azure Blob Storage
// container, as block blobs, through the official SDK
// (github.com/Azure/azure-sdk-for-go/sdk/storage/azblob).
//
// Create-if-absent is If-None-Match: * on the request that creates the
// blob: Put Blob for an object of at most one block (PartSize), Put Block
// List for a larger one, whose blocks are staged first (Put Block, up to
// Concurrency in flight per upload, from buffers of the BufferPool). The
// service refuses the request when a blob of that name exists (409
// BlobAlreadyExists or 412 ConditionNotMet), which Commit reports as
// ErrExists. Staged blocks stay invisible, and the name free, until the
// block list is committed; the block ids of an upload start with a random
// nonce of its own, so that two writers staging under one name never
// replace each other's blocks.
type azureStore struct {
	client      *container.Client
	account     string
	name        string // the container's name
	prefix      string // "" or ends in "/"
	blockSize   int
	concurrency int
	pool        BufferPool
	// listPageSize is the number of blobs asked for per listing page;
	// 0 leaves it to the service (5000 on Azure).
	listPageSize int32
}

// azureOptions are the Options that apply to azblob:// stores besides
// Buffers and OnRetry, which every store takes.
var azureOptions = []string{"Endpoint", "PartSize", "MaxRetries", "MaxRetryWait", "Concurrency"}

// azureCredentials says which credentials an azblob:// store signs with,
// for tests and errors: "shared key", "SAS token" or "default chain".
type azureCredentials string

func openAzure(ctx context.Context, u *url.URL, opts []Option) (Store, error) {
	loc := azureRedactURL(u)
	containerName, accountHost, err := azureContainer(u)
	if err != nil {
		return nil, fmt.Errorf("objstore: %s: %w", loc, err)
	}
	urlOpts, err := urlParams(u.Query())
	if err != nil {
		return nil, fmt.Errorf("objstore: %s: %w", loc, err)
	}
	o := defaultOptions()
	if err := applyOptions(&o, append(urlOpts, opts...)); err != nil {
		return nil, fmt.Errorf("objstore: %s: %w", loc, err)
	}
	for _, name := range o.s3Only {
		if !slices.Contains(azureOptions, name) {
			return nil, fmt.Errorf("objstore: %s: option %s applies only to s3:// stores", loc, name)
		}
	}
	accountURL, account, err := azureAccountURL(o.endpoint, accountHost, os.Getenv(EnvAzureAccount))
	if err != nil {
		return nil, fmt.Errorf("objstore: %s: %w", loc, err)
	}
	s := &azureStore{
		account:     account,
		name:        containerName,
		prefix:      strings.TrimPrefix(u.Path, "/"),
		blockSize:   o.partSize,
		concurrency: o.concurrency,
		pool:        o.pool,
	}
	if s.prefix != "" && !strings.HasSuffix(s.prefix, "/") {
		s.prefix += "/"
	}
	if s.pool == nil {
		s.pool = &freeList{}
	}
	copts := &container.ClientOptions{ClientOptions: azcore.ClientOptions{
		Retry: policy.RetryOptions{
			// The SDK's 0 means its default of 3; less than 0 means none.
			MaxRetries:    int32(min(o.maxRetries, 1<<30)),
			RetryDelay:    retryBaseDelay,
			MaxRetryDelay: o.maxRetryWait,
			// StatusCodes: the SDK's default, 408, 429, 500, 502, 503
			// and 504, plus broken connections. Never 409 or 412.
		},
	}}
	if o.maxRetries == 0 {
		copts.Retry.MaxRetries = -1
	}
	// The per-retry policies run inside the SDK's retry loop, in order,
	// the last one nearest the network: the clamp sees each answer before
	// the retry loop reads its Retry-After.
	copts.PerCallPolicies = []policy.Policy{azureAttemptCount{}}
	if o.onRetry != nil {
		copts.PerRetryPolicies = append(copts.PerRetryPolicies, azureRetryHook{hook: o.onRetry})
	}
	copts.PerRetryPolicies = append(copts.PerRetryPolicies,
		azureRetryAfterClamp{limit: o.maxRetryWait, count: o.onRetry == nil, onRetryAfter: o.onRetryAfter})
	containerURL := strings.TrimSuffix(accountURL, "/") + "/" + url.PathEscape(containerName)
	_, s.client, err = azureClient(containerURL, account, copts)
	if err != nil {
		return nil, fmt.Errorf("objstore: %s: %w", loc, err)
	}
	return s, nil
}

// azureClient returns a client of the container at containerURL, signed
// with the first credentials that the environment has: the account's
// shared key (AZURE_STORAGE_KEY), a SAS token (AZURE_STORAGE_SAS_TOKEN),
// or else the default Azure credential chain (environment, workload
// identity, managed identity, Azure CLI).
func azureClient(containerURL, account string, copts *container.ClientOptions) (azureCredentials, *container.Client, error) {
	if key := os.Getenv(EnvAzureKey); key != "" {
		if account == "" {
			return "", nil, fmt.Errorf("%s is set but no account is known: set %s, or give the account's URL as the endpoint", EnvAzureKey, EnvAzureAccount)
		}
		cred, err := container.NewSharedKeyCredential(account, key)
		if err != nil {
			// The SDK's error names no part of the key.
			return "", nil, fmt.Errorf("%s: %w", EnvAzureKey, err)
		}
		c, err := container.NewClientWithSharedKeyCredential(containerURL, cred, copts)
		return "shared key", c, err
	}
	if sas := os.Getenv(EnvAzureSASToken); sas != "" {
		sas = strings.TrimPrefix(sas, "?")
		if _, err := url.ParseQuery(sas); err != nil || !strings.Contains(sas, "sig=") {
			return "", nil, fmt.Errorf("%s is not a SAS token (the query string of a SAS URL, with sig=)", EnvAzureSASToken)
		}
		c, err := container.NewClientWithNoCredential(containerURL+"?"+sas, copts)
		return "SAS token", c, err
	}
	cred, err := azidentity.NewDefaultAzureCredential(nil)
	if err != nil {
		return "", nil, fmt.Errorf("no %s or %s, and the default Azure credential chain: %w", EnvAzureKey, EnvAzureSASToken, err)
	}
	c, err := container.NewClient(containerURL, cred, copts)
	return "default chain", c, err
}

// azureContainer returns the container that an azblob:// or abfss:// URL
// names, and, for abfss://CONTAINER@ACCOUNT.dfs.core.windows.net, the
// blob service's host of the account (ACCOUNT.blob.core.windows.net).
func azureContainer(u *url.URL) (name, accountHost string, err error) {
	switch u.Scheme {
	case "azblob":
		if u.User != nil {
			return "", "", errors.New("want azblob://container[/prefix]: no user part (credentials go in the environment)")
		}
		if u.Host == "" {
			return "", "", errors.New("want azblob://container[/prefix]: the container is missing")
		}
		if u.Port() != "" {
			return "", "", errors.New("want azblob://container[/prefix]: a container has no port; an emulator goes in the endpoint")
		}
		return u.Host, "", nil
	case "abfss":
		if u.User == nil || u.User.Username() == "" {
			return "", "", errors.New("want abfss://container@account.dfs.core.windows.net[/prefix]: the container is missing")
		}
		if _, has := u.User.Password(); has {
			return "", "", errors.New("want abfss://container@account.dfs.core.windows.net[/prefix]: no password (credentials go in the environment)")
		}
		account, suffix, ok := strings.Cut(u.Hostname(), ".dfs.")
		if !ok || account == "" || suffix == "" || u.Port() != "" {
			return "", "", errors.New("want abfss://container@account.dfs.core.windows.net[/prefix]: the host is not an account's dfs endpoint")
		}
		return u.User.Username(), account + ".blob." + suffix, nil
	}
	return "", "", fmt.Errorf("scheme %q is not azblob or abfss", u.Scheme)
}

// azureAccountURL returns the blob service URL of the storage account,
// and the account's name, from the endpoint if one is given, else from
// the abfss:// URL's host, else from AZURE_STORAGE_ACCOUNT (envAccount).
// An endpoint whose path is the account's name (Azurite's
// http://127.0.0.1:10000/devstoreaccount1) names the account by it, one
// on an account's own host (https://ACCOUNT.blob.core.windows.net) by the
// host's first label; AZURE_STORAGE_ACCOUNT, when set, wins over both.
func azureAccountURL(endpoint, accountHost, envAccount string) (string, string, error) {
	if endpoint != "" {
		u, err := url.Parse(endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return "", "", fmt.Errorf("endpoint %q: want the account's URL, http(s)://host[:port][/account]", endpoint)
		}
		if u.RawQuery != "" || u.User != nil {
			return "", "", fmt.Errorf("endpoint: want the account's URL without a query or credentials (a SAS token goes in %s)", EnvAzureSASToken)
		}
		account := envAccount
		if path := strings.Trim(u.Path, "/"); path != "" {
			if strings.Contains(path, "/") {
				return "", "", fmt.Errorf("endpoint %q: want the account's URL, http(s)://host[:port][/account]", endpoint)
			}
			if account == "" {
				account = path
			}
		} else if account == "" && hostNamesAccount(u.Hostname()) {
			account, _, _ = strings.Cut(u.Hostname(), ".")
		}
		return strings.TrimSuffix(u.String(), "/"), account, nil
	}
	if accountHost != "" {
		account, _, _ := strings.Cut(accountHost, ".")
		if envAccount != "" && envAccount != account {
			return "", "", fmt.Errorf("%s is %q but the URL names account %q", EnvAzureAccount, envAccount, account)
		}
		return "https://" + accountHost, account, nil
	}
	if envAccount == "" {
		return "", "", fmt.Errorf("no storage account: set %s, or give the account's URL as the endpoint", EnvAzureAccount)
	}
	return "https://" + envAccount + ".blob.core.windows.net", envAccount, nil
}

// hostNamesAccount reports whether host is a name whose first label can
// be an account (not an IP address nor localhost).
func hostNamesAccount(host string) bool {
	return strings.Contains(host, ".") && strings.Trim(host, "0123456789.:[]") != "" && host != "localhost"
}

// azureRedactURL returns u for errors, without its query (a SAS token
// could be there) or password.
func azureRedactURL(u *url.URL) string {
	c := *u
	c.RawQuery, c.Fragment = "", ""
	if c.User != nil {
		c.User = url.User(c.User.Username())
	}
	return c.String()
}

// azureSig matches the signature of a SAS token in a URL.
var azureSig = regexp.MustCompile(`(?i)\bsig=[^&"'\s]+`)

// azureError makes the SDK's error fit one log line and hold no secret:
// a response error becomes its operation's status and error code (the
// SDK's text runs over many lines, with the whole response), any SAS
// signature in a URL is redacted (a broken connection's *url.Error quotes
// the request's URL), and ErrExists or ErrNotExist is added where they
// apply. The SDK's error stays underneath for errors.Is and errors.As.
func azureError(err error) error {
	if err == nil {
		return nil
	}
	var re *azcore.ResponseError
	var msg string
	if errors.As(err, &re) {
		msg = fmt.Sprintf("%d %s", re.StatusCode, http.StatusText(re.StatusCode))
		if re.ErrorCode != "" {
			msg += " (" + re.ErrorCode + ")"
		}
	} else {
		msg = oneLine(azureSig.ReplaceAllString(err.Error(), "sig=REDACTED"))
	}
	var gaveUp *azureGaveUp
	if re != nil && errors.As(err, &gaveUp) {
		msg = fmt.Sprintf("gave up after %d attempts: %s", gaveUp.attempts, msg)
	}
	e := &redactedError{msg: msg, err: err}
	switch {
	case bloberror.HasCode(err, bloberror.ContainerNotFound):
		return e // a configuration error, not a missing object
	case bloberror.HasCode(err, bloberror.BlobNotFound) || (re != nil && re.StatusCode == http.StatusNotFound):
		return fmt.Errorf("%w: %w", ErrNotExist, e)
	case bloberror.HasCode(err, bloberror.BlobAlreadyExists) ||
		(re != nil && re.StatusCode == http.StatusPreconditionFailed):
		return fmt.Errorf("%w: %w", ErrExists, e)
	}
	return e
}

// oneLine joins the lines of an error's text for a log line: the
// default Azure credential chain's error lists the credentials it tried
// one per indented line, after a heading, and a credential's failure
// quotes the response under a rule of dashes. Rules go, and listed items
// are separated by "; ".
func oneLine(s string) string {
	if !strings.Contains(s, "\n") {
		return s
	}
	var b strings.Builder
	prevItem := false
	for _, line := range strings.Split(s, "\n") {
		item := strings.HasPrefix(line, "\t") || strings.HasPrefix(line, " ")
		line = strings.TrimSpace(line)
		if strings.Trim(line, "-=") == "" {
			continue
		}
		if b.Len() > 0 {
			if item && prevItem {
				b.WriteString("; ")
			} else {
				b.WriteString(" ")
			}
		}
		b.WriteString(line)
		prevItem = item
	}
	return b.String()
}

// location names an object in errors.
func (s *azureStore) location(key string) string {
	return "azblob://" + s.name + "/" + s.prefix + key
}

// azureInfo returns an Info from the properties the SDK reports.
func azureInfo(key string, size *int64, etag *azcore.ETag, modified *time.Time) Info {
	info := Info{Key: key}
	if size != nil {
		info.Size = *size
	}
	if etag != nil {
		info.ETag = strings.Trim(string(*etag), `"`)
	}
	if modified != nil {
		info.Modified = *modified
	}
	return info
}

func (s *azureStore) blob(key string) *blob.Client {
	return s.client.NewBlobClient(s.prefix + key)
}

func (s *azureStore) Get(ctx context.Context, key string) (io.ReadCloser, Info, error) {
	if err := checkKey(key); err != nil {
		return nil, Info{}, fmt.Errorf("objstore: get: %w", err)
	}
	resp, err := s.blob(key).DownloadStream(ctx, nil)
	if err != nil {
		return nil, Info{}, fmt.Errorf("objstore: get %s: %w", s.location(key), azureError(err))
	}
	return resp.Body, azureInfo(key, resp.ContentLength, resp.ETag, resp.LastModified), nil
}

func (s *azureStore) Head(ctx context.Context, key string) (Info, error) {
	if err := checkKey(key); err != nil {
		return Info{}, fmt.Errorf("objstore: head: %w", err)
	}
	resp, err := s.blob(key).GetProperties(ctx, nil)
	if err != nil {
		return Info{}, fmt.Errorf("objstore: head %s: %w", s.location(key), azureError(err))
	}
	return azureInfo(key, resp.ContentLength, resp.ETag, resp.LastModified), nil
}

func (s *azureStore) NewReaderAt(ctx context.Context, key string) (ReaderAt, error) {
	info, err := s.Head(ctx, key)
	if err != nil {
		return nil, err
	}
	return &azureReaderAt{ctx: ctx, store: s, info: info}, nil
}

// azureReaderAt reads ranges of the version seen when it was opened (an
// If-Match on its ETag), so that a replaced object fails loudly instead of
// mixing two versions.
type azureReaderAt struct {
	ctx   context.Context
	store *azureStore
	info  Info
}

func (r *azureReaderAt) Size() int64 { return r.info.Size }

func (r *azureReaderAt) Close() error { return nil }

func (r *azureReaderAt) ReadAt(p []byte, off int64) (int, error) {
	loc := r.store.location(r.info.Key)
	if off < 0 {
		return 0, fmt.Errorf("objstore: read %s: negative offset %d", loc, off)
	}
	if off >= r.info.Size {
		return 0, io.EOF
	}
	if len(p) == 0 {
		return 0, nil
	}
	want := min(int64(len(p)), r.info.Size-off)
	etag := azcore.ETag(`"` + r.info.ETag + `"`)
	resp, err := r.store.blob(r.info.Key).DownloadStream(r.ctx, &blob.DownloadStreamOptions{
		Range: blob.HTTPRange{Offset: off, Count: want},
		AccessConditions: &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{
			IfMatch: &etag,
		}},
	})
	if err != nil {
		if bloberror.HasCode(err, bloberror.ConditionNotMet, bloberror.BlobNotFound) {
			return 0, fmt.Errorf("objstore: read %s at %d: object changed since it was opened (ETag %s is gone)", loc, off, r.info.ETag)
		}
		return 0, fmt.Errorf("objstore: read %s at %d: %w", loc, off, azureError(err))
	}
	defer resp.Body.Close()
	n, err := io.ReadFull(resp.Body, p[:want])
	if err != nil {
		return n, fmt.Errorf("objstore: read %s at %d: %w", loc, off, azureError(err))
	}
	if want < int64(len(p)) {
		return n, io.EOF
	}
	return n, nil
}

// List pages through the container's flat listing. Azure lists blob names
// in lexicographic order, as Store requires, and leaves out blobs that
// have only uncommitted blocks (unfinished uploads).
func (s *azureStore) List(ctx context.Context, prefix string) iter.Seq2[Info, error] {
	return func(yield func(Info, error) bool) {
		full := s.prefix + prefix
		opts := &container.ListBlobsFlatOptions{Prefix: &full}
		if s.listPageSize > 0 {
			opts.MaxResults = &s.listPageSize
		}
		pager := s.client.NewListBlobsFlatPager(opts)
		for pager.More() {
			page, err := pager.NextPage(ctx)
			if err != nil {
				yield(Info{}, fmt.Errorf("objstore: list %s: %w", s.location(prefix), azureError(err)))
				return
			}
			if page.Segment == nil {
				continue
			}
			for _, item := range page.Segment.BlobItems {
				if item.Name == nil {
					continue
				}
				info := Info{Key: strings.TrimPrefix(*item.Name, s.prefix)}
				if p := item.Properties; p != nil {
					info = azureInfo(info.Key, p.ContentLength, p.ETag, p.LastModified)
				}
				if !yield(info, nil) {
					return
				}
			}
		}
	}
}

func (s *azureStore) Delete(ctx context.Context, key string) error {
	if err := checkKey(key); err != nil {
		return fmt.Errorf("objstore: delete: %w", err)
	}
	_, err := s.blob(key).Delete(ctx, nil)
	if err != nil && !bloberror.HasCode(err, bloberror.BlobNotFound) {
		return fmt.Errorf("objstore: delete %s: %w", s.location(key), azureError(err))
	}
	return nil
}

// AbortStaleUploads has nothing to do on Azure, and returns 0. An upload
// that never finished left staged blocks that were never committed: they
// belong to no blob that a listing, a Head or a Get shows, the name stays
// free, and Azure discards them by itself a week after they were staged,
// or as soon as a block list is committed under the name. There is no call
// that deletes uncommitted blocks.
func (s *azureStore) AbortStaleUploads(context.Context, string, time.Duration) (int, error) {
	return 0, nil
}

func (s *azureStore) Close() error { return nil }

// azureAttemptCount is a per-call policy that gives each operation call a
// count of its attempts, which azureRetryHook and azureRetryAfterClamp
// keep, and makes a call that ran out of retries say so: its last answer
// becomes an error that names the number of attempts.
type azureAttemptCount struct{}

func (azureAttemptCount) Do(req *policy.Request) (*http.Response, error) {
	c := &attemptCount{}
	ctx := context.WithValue(req.Raw().Context(), attemptsKey{}, c)
	resp, err := req.WithContext(ctx).Next()
	if c.n <= 1 || req.Raw().Context().Err() != nil {
		return resp, err
	}
	if err != nil {
		return resp, &azureGaveUp{attempts: c.n, err: err}
	}
	if azureRetriedStatus(resp.StatusCode) {
		return nil, &azureGaveUp{attempts: c.n, err: runtime.NewResponseError(resp)}
	}
	return resp, nil
}

// azureRetriedStatus reports whether the SDK retries an answer of this
// status (its default list).
func azureRetriedStatus(code int) bool {
	switch code {
	case http.StatusRequestTimeout, http.StatusTooManyRequests, http.StatusInternalServerError,
		http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// azureGaveUp is the failure of an operation call after its last retry.
type azureGaveUp struct {
	attempts int
	err      error
}

func (e *azureGaveUp) Error() string {
	return fmt.Sprintf("gave up after %d attempts: %v", e.attempts, e.err)
}

func (e *azureGaveUp) Unwrap() error { return e.err }

// azureRetryAfterClamp is a per-retry policy that shortens a Retry-After
// (or retry-after-ms) longer than MaxRetryWait to MaxRetryWait. Azure's
// SDK waits what the answer asks, but gives up at once, without the
// retries it has left, when that is more than its MaxRetryDelay: a
// throttled account that asks for 30 s would fail the upload on the
// first 503. Clamped, the store waits MaxRetryWait and retries. It also
// counts the call's attempts (count) when azureRetryHook does not.
type azureRetryAfterClamp struct {
	limit        time.Duration
	count        bool
	onRetryAfter func(time.Duration) // see options.onRetryAfter
}

func (p azureRetryAfterClamp) Do(req *policy.Request) (*http.Response, error) {
	if c, _ := req.Raw().Context().Value(attemptsKey{}).(*attemptCount); c != nil && p.count {
		c.n++
	}
	resp, err := req.Next()
	if err != nil || resp == nil || resp.StatusCode < 400 {
		return resp, err
	}
	ra := retryAfter(resp.Header, time.Now())
	if ra <= 0 {
		return resp, err
	}
	d := retryWait(0, ra, p.limit)
	for _, h := range []string{"Retry-After", "retry-after-ms", "x-ms-retry-after-ms"} {
		resp.Header.Del(h)
	}
	resp.Header.Set("retry-after-ms", strconv.FormatInt(d.Milliseconds(), 10))
	if p.onRetryAfter != nil && azureRetriedStatus(resp.StatusCode) {
		p.onRetryAfter(d)
	}
	return resp, err
}

// azureRetryHook is a per-retry policy, inside the SDK's retry loop, that
// calls OnRetry's hook before each attempt that follows a failed one,
// once the backoff has elapsed.
type azureRetryHook struct {
	hook func(op string, attempt int, err error)
}

func (p azureRetryHook) Do(req *policy.Request) (*http.Response, error) {
	c, _ := req.Raw().Context().Value(attemptsKey{}).(*attemptCount)
	if c == nil {
		return req.Next()
	}
	c.n++
	if c.n > 1 {
		p.hook(azureOperation(req.Raw()), c.n-1, c.lastErr)
	}
	resp, err := req.Next()
	switch {
	case err != nil:
		c.lastErr = azureError(err)
	case resp.StatusCode >= 400:
		c.lastErr = fmt.Errorf("%d %s", resp.StatusCode, http.StatusText(resp.StatusCode))
		if code := resp.Header.Get("x-ms-error-code"); code != "" {
			c.lastErr = fmt.Errorf("%w (%s)", c.lastErr, code)
		}
	default:
		c.lastErr = nil
	}
	return resp, err
}

// azureOperation names the Blob service operation of a request, after
// its REST API's names.
func azureOperation(r *http.Request) string {
	comp := r.URL.Query().Get("comp")
	switch {
	case r.Method == http.MethodPut && comp == "block":
		return "PutBlock"
	case r.Method == http.MethodPut && comp == "blocklist":
		return "PutBlockList"
	case r.Method == http.MethodPut:
		return "PutBlob"
	case r.Method == http.MethodGet && comp == "list":
		return "ListBlobs"
	case r.Method == http.MethodGet:
		return "GetBlob"
	case r.Method == http.MethodHead:
		return "GetBlobProperties"
	case r.Method == http.MethodDelete:
		return "DeleteBlob"
	}
	return r.Method
}
