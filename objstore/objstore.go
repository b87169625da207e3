// Package objstore is the object store as the connector sees it: immutable
// objects created only if absent, read whole or by range, listed, deleted.
//
// Two implementations sit behind one interface and pass the same behaviour
// tests: S3 (any S3-compatible endpoint, via aws-sdk-go-v2) and a local
// directory. Create-if-absent is what makes the sink's exactly-once protocol
// safe against a fenced-off writer: the first object under a key wins, and a
// later Create of the same key fails with ErrExists instead of overwriting.
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

// ErrExists is returned (wrapped) by Create when the key already exists.
var ErrExists = errors.New("object already exists")

// ErrNotExist is returned (wrapped) when the key does not exist.
var ErrNotExist = errors.New("object does not exist")

// Store is a bucket of immutable objects addressed by keys. Keys are
// slash-separated relative paths: no leading or trailing slash, no empty,
// "." or ".." elements, no NUL bytes. Implementations are safe for
// concurrent use.
type Store interface {
	// Create streams r into a new object under key, only if no object has
	// that key yet; otherwise it returns ErrExists and leaves the existing
	// object untouched. Nothing is visible under key until Create returns
	// successfully; on any failure, including a read error from r or a
	// cancelled ctx, nothing is left behind. The returned Info has Key,
	// Size and ETag; Modified may be zero.
	Create(ctx context.Context, key string, r io.Reader, opts ...PutOption) (Info, error)

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
//	s3://bucket[/prefix][?region=R&endpoint=URL&path_style=true&sse=AES256|aws:kms&sse_kms_key_id=ID&part_size=N]
//	file:///absolute/dir
//
// For S3, credentials come from the default AWS chain (environment, shared
// files, instance roles) unless StaticCredentials is given; options override
// the URL's parameters. The directory of a file URL is created if needed.
func Open(ctx context.Context, rawURL string, opts ...Option) (Store, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("objstore: %w", err)
	}
	switch u.Scheme {
	case "s3":
		return openS3(ctx, u, opts)
	case "file":
		return openDir(u, opts)
	default:
		return nil, fmt.Errorf("objstore: %q: unsupported scheme %q (want s3 or file)", rawURL, u.Scheme)
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
