// Package objstore is the object store as the connector sees it: immutable
// objects created only if absent, streamed in as they are produced, read
// whole or by range, listed, deleted.
//
// Four implementations sit behind one interface and pass the same
// behaviour tests: S3 (any S3-compatible endpoint, via aws-sdk-go-v2),
// Google Cloud Storage (via cloud.google.com/go/storage), Azure Blob
// Storage (via the Azure SDK's azblob) and a local directory. Create-if-absent is what makes the sink's exactly-once protocol
// safe against a fenced-off writer: the first object under a key wins, and a
// later upload of the same key fails with ErrExists instead of overwriting.
//
// # Streaming uploads
//
// Store.Create returns an Upload, an io.Writer into which the Parquet writer
// pushes each row group as it is encoded; Commit makes the object visible
// under its key, Abort throws it away. Nothing is visible under the key
// before Commit succeeds, and nothing is left behind by an upload that
// fails or is aborted. Put wraps the three for callers that hold a reader.
// The usual shape is:
//
//	up, err := store.Create(ctx, key)
//	if err != nil { ... }
//	defer up.Abort(ctx) // a no-op once Commit has succeeded
//	... write to up ...
//	info, err := up.Commit(ctx) // errors.Is(err, ErrExists): adopt the existing object
//
// On S3, an object smaller than one part (PartSize) goes up in a single
// PUT at Commit. A larger one becomes a multipart upload, started when the
// first part fills: each full part uploads in the background while Write
// goes on filling the next, with at most Concurrency parts in flight per
// upload (Write blocks beyond that), and Commit completes the upload once
// the last part is in. Part buffers come from a BufferPool shared by all
// uploads of the store, so that a memory budget can cover them; an upload
// holds at most Concurrency+1 of them.
//
// # Retries and idempotence
//
// Every S3 request is retried, with exponential backoff and full jitter, on
// 5xx answers, throttling (503 SlowDown), timeouts and broken connections;
// see MaxRetries and OnRetry. A 412 Precondition Failed is never retried:
// it is ErrExists. Retrying the request that commits an object (the
// conditional PutObject, or CompleteMultipartUpload) after an attempt that
// did succeed, but whose answer was lost, finds the object already there:
// S3 answers 412, or NoSuchUpload for a completion, in which case Commit
// looks the key up. Either way Commit reports ErrExists, and the caller
// adopts the existing object, as it would another writer's. That is correct
// for the sink's protocol: an object under a key holds, by construction,
// the records that any writer of that key would have put there.
//
// On GCS every write carries the ifGenerationMatch=0 precondition, which
// makes it idempotent in the SDK's eyes: the SDK retries the requests of a
// resumable upload (its start and each chunk) on 408, 429, 5xx and broken
// connections, with the same backoff and MaxRetries, and the store retries
// the single request of a small object from its buffer. A retry of a write
// that did land meets the precondition: 412, ErrExists, as on S3.
//
// On Azure every request that creates a blob (Put Blob, Put Block List)
// carries If-None-Match: *, and the SDK retries every request on 408, 429,
// 5xx and broken connections, rewinding the buffer it sends, with the
// same MaxRetries and exponential backoff with jitter. A retry of a write
// that did land meets the condition (409 BlobAlreadyExists): ErrExists.
//
// # Stores without conditional writes
//
// Some S3-compatible services ignore If-None-Match. With
// ConditionalWrites(false), Commit overwrites an existing object instead of
// failing with ErrExists. What is lost is the fencing: a writer that has
// been fenced off (a zombie that has not yet noticed that its partitions
// moved) can overwrite a newer owner's object under the same key. Keys are
// deterministic, so both objects start at the same record, and they hold
// the same records whenever both writers cut the file at the same record
// (rotation by record count). When they cut it elsewhere (rotation by size,
// age, schedule or memory pressure), the overwriting object can end before
// records that the newer owner has already committed past, which are then
// lost, or run into the next object's records, which are then duplicated.
package objstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/url"
	"strings"
	"time"
)

// ErrExists is returned (wrapped) by Commit when the key already exists.
var ErrExists = errors.New("object already exists")

// ErrNotExist is returned (wrapped) when the key does not exist.
var ErrNotExist = errors.New("object does not exist")

// Store is a bucket of immutable objects addressed by keys. Keys are
// slash-separated relative paths: no leading or trailing slash, no empty,
// "." or ".." elements, no NUL bytes. Implementations are safe for
// concurrent use.
type Store interface {
	// Create starts a new object under key. Nothing is visible under key
	// until the Upload's Commit succeeds, and Commit creates the object
	// only if no object has that key yet (see Upload). Create checks the
	// key; it need not contact the store.
	//
	// ctx governs the whole upload, not only this call: the Upload's
	// writes, the parts it sends in the background, and its Commit fail
	// once ctx is done. The caller must end every Upload with Commit or
	// Abort.
	Create(ctx context.Context, key string, opts ...PutOption) (Upload, error)

	// Get opens the object for reading. The caller must close the reader.
	Get(ctx context.Context, key string) (io.ReadCloser, Info, error)

	// NewReaderAt opens the object for random access. ctx governs every
	// ReadAt of the returned reader. The caller must close it.
	NewReaderAt(ctx context.Context, key string) (ReaderAt, error)

	// Head returns the object's Info, or ErrNotExist.
	Head(ctx context.Context, key string) (Info, error)

	// List yields every object whose key starts with prefix, in
	// lexicographic byte order of keys. The prefix is a plain string
	// prefix, not a directory. An error ends the sequence.
	List(ctx context.Context, prefix string) iter.Seq2[Info, error]

	// Delete removes the object. Deleting a key that does not exist is not
	// an error.
	Delete(ctx context.Context, key string) error

	// AbortStaleUploads discards uploads under prefix that were started
	// more than olderThan ago and never finished (S3 multipart uploads,
	// temporary files of the directory store), left behind by a crashed
	// writer. It returns how many it discarded. Uploads in progress in
	// other processes are younger than any sensible olderThan.
	AbortStaleUploads(ctx context.Context, prefix string, olderThan time.Duration) (int, error)

	// Close releases the store's resources.
	Close() error
}

// Upload is an object being written. Its methods are not safe for
// concurrent use: one goroutine writes, then commits or aborts. To stop a
// Write or Commit that blocks, cancel the context given to Create.
type Upload interface {
	// Write appends p to the object. On S3 it fills part buffers taken
	// from the store's BufferPool, and a full part uploads in the
	// background while Write goes on; Write blocks while Concurrency parts
	// are in flight, or while the pool has no buffer to give. An error
	// from Write (including the failure of a part sent earlier, or the end
	// of the Create context) is final: the upload is lost, and the caller
	// must Abort it.
	io.Writer

	// Commit finishes the object, create-if-absent: when the key already
	// exists it returns ErrExists (wrapped), and the existing object is
	// untouched. Any error leaves nothing of this upload behind (a
	// multipart upload is aborted). On success the object is durable and
	// visible under its key, and the returned Info has Key, Size and ETag;
	// Modified may be zero. ErrExists may also mean that this very upload
	// landed on an attempt whose answer was lost (see the package
	// documentation): the caller adopts the existing object either way.
	Commit(ctx context.Context) (Info, error)

	// Abort discards everything written: parts in flight are cancelled,
	// the multipart upload or temporary file is removed, and nothing is
	// left behind. It is safe, and a no-op, after a successful Commit, and
	// safe after a failed one (which has already cleaned up), so a
	// deferred Abort suits every path. The clean-up runs detached from
	// ctx's cancellation, bounded by a timeout of its own, so that an
	// upload is removed even when it failed because its context ended.
	Abort(ctx context.Context) error

	// Written returns the number of bytes that Write has accepted so far.
	Written() int64
}

// Put streams r into a new object under key, with Create, Write and
// Commit, and aborts the upload if reading r or anything else fails. The
// Info, ErrExists and the guarantees are Commit's.
func Put(ctx context.Context, s Store, key string, r io.Reader, opts ...PutOption) (Info, error) {
	up, err := s.Create(ctx, key, opts...)
	if err != nil {
		return Info{}, err
	}
	src := &readErrors{r: r}
	if _, err := io.Copy(up, src); err != nil {
		if src.err != nil {
			err = fmt.Errorf("objstore: put %s: reading: %w", key, src.err)
		}
		return Info{}, errors.Join(err, up.Abort(ctx))
	}
	info, err := up.Commit(ctx)
	if err != nil {
		return Info{}, errors.Join(err, up.Abort(ctx))
	}
	return info, nil
}

// readErrors remembers its reader's error, to tell a read error from a
// write error in io.Copy. It also hides the reader's WriterTo, which would
// otherwise receive the upload's errors as its own.
type readErrors struct {
	r   io.Reader
	err error
}

func (r *readErrors) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	// io.EOF is compared, not matched with errors.Is, as io.Copy does: a
	// failure that merely wraps it must not pass for a clean end that
	// would commit a truncated object.
	if err != nil && err != io.EOF {
		r.err = err
	}
	return n, err
}

// Info describes an object.
type Info struct {
	Key      string    // key relative to the store's root
	Size     int64     // bytes
	ETag     string    // opaque version tag, without quotes; changes when the object is replaced
	Modified time.Time // last modification as reported by the store
}

// ReaderAt reads ranges of one object. It is safe for concurrent use.
type ReaderAt interface {
	io.ReaderAt
	io.Closer
	// Size returns the object's size in bytes.
	Size() int64
}

// Open returns the store that rawURL names:
//
//	s3://bucket[/prefix][?region=R&endpoint=URL&path_style=true&sse=AES256|aws:kms&sse_kms_key_id=ID&part_size=N&conditional_writes=false]
//	gs://bucket[/prefix][?endpoint=URL&part_size=N]
//	azblob://container[/prefix][?endpoint=URL&part_size=N]
//	abfss://container@account.dfs.core.windows.net[/prefix][?part_size=N]
//	file:///absolute/dir
//
// For S3, credentials come from the default AWS chain (environment, shared
// files, instance roles) unless StaticCredentials is given; options override
// the URL's parameters. For GCS, they are the Application Default
// Credentials (GOOGLE_APPLICATION_CREDENTIALS, gcloud's, workload
// identity); an http:// Endpoint is an emulator, reached without
// credentials, as is STORAGE_EMULATOR_HOST without an Endpoint. For Azure
// Blob Storage, Endpoint is the storage account's URL
// (https://ACCOUNT.blob.core.windows.net, or Azurite's
// http://127.0.0.1:10000/ACCOUNT); without one, the account is the abfss://
// URL's, or AZURE_STORAGE_ACCOUNT's. Its credentials are the account's
// shared key (AZURE_STORAGE_KEY), else a SAS token
// (AZURE_STORAGE_SAS_TOKEN), else the default Azure credential chain
// (environment, workload identity, managed identity, Azure CLI). The
// directory of a file URL is created if needed.
func Open(ctx context.Context, rawURL string, opts ...Option) (Store, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("objstore: %w", err)
	}
	switch u.Scheme {
	case "s3":
		return openS3(ctx, u, opts)
	case "gs":
		return openGCS(ctx, u, opts)
	case "azblob", "abfss":
		return openAzure(ctx, u, opts)
	case "file":
		return openDir(u, opts)
	default:
		return nil, fmt.Errorf("objstore: %s: unsupported scheme %q (want s3, gs, azblob, abfss or file)", azureRedactURL(u), u.Scheme)
	}
}

// tempPrefix starts the names of the directory store's temporary files.
// Keys may not contain an element with this prefix, so a temporary file can
// never be mistaken for an object.
const tempPrefix = ".pqsink-upload-"

// checkKey reports whether key is a valid object key (see Store).
func checkKey(key string) error {
	if key == "" {
		return errors.New("empty key")
	}
	if strings.IndexByte(key, 0) >= 0 {
		return fmt.Errorf("key %q contains a NUL byte", key)
	}
	for elem := range strings.SplitSeq(key, "/") {
		switch {
		case elem == "":
			return fmt.Errorf("key %q has an empty path element (leading, trailing or double slash)", key)
		case elem == "." || elem == "..":
			return fmt.Errorf("key %q has a %q path element", key, elem)
		case strings.HasPrefix(elem, tempPrefix):
			return fmt.Errorf("key %q has an element starting with the reserved %q", key, tempPrefix)
		}
	}
	return nil
}

// uploadState is where an Upload is in its life.
type uploadState int

const (
	uploadOpen      uploadState = iota // accepting writes
	uploadFailed                       // an error happened; clean-up may still be due
	uploadCommitted                    // the object is in place
	uploadAborted                      // everything is cleaned up
)

// errFinished explains why a finished upload refuses a call.
func (s uploadState) errFinished() error {
	switch s {
	case uploadCommitted:
		return errors.New("upload already committed")
	case uploadAborted:
		return errors.New("upload aborted")
	}
	return nil
}
