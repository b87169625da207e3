package objstore

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"iter"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// dirStore keeps each object as a file under a root directory, at the
// object's key. All access goes through an os.Root, so no key, symlink or
// race can reach outside the root.
type dirStore struct {
	dir  string
	root *os.Root
}

func openDir(u *url.URL, opts []Option) (Store, error) {
	var o options
	if err := applyOptions(&o, opts); err != nil {
		return nil, fmt.Errorf("objstore: %s: %w", u.Redacted(), err)
	}
	if len(o.s3Only) > 0 {
		kinds := "s3://"
		if slices.Contains(gcsOptions, o.s3Only[0]) {
			kinds = "s3:// and gs://"
		}
		return nil, fmt.Errorf("objstore: %s: option %s applies only to %s stores", u.Redacted(), o.s3Only[0], kinds)
	}
	if u.Host != "" && u.Host != "localhost" {
		return nil, fmt.Errorf("objstore: %s: remote host %q in a file URL (want file:///absolute/dir)", u.Redacted(), u.Host)
	}
	if u.RawQuery != "" {
		return nil, fmt.Errorf("objstore: %s: file URLs take no parameters", u.Redacted())
	}
	dir := filepath.FromSlash(u.Path)
	if !filepath.IsAbs(dir) {
		return nil, fmt.Errorf("objstore: %s: path %q is not absolute", u.Redacted(), u.Path)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("objstore: %w", err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("objstore: %w", err)
	}
	return &dirStore{dir: dir, root: root}, nil
}

// location names an object in errors.
func (s *dirStore) location(key string) string {
	return "file://" + filepath.ToSlash(filepath.Join(s.dir, key))
}

// Create opens a temporary file in the key's directory, named with
// tempPrefix, into which the Upload writes. Commit syncs it and then
// hard-links it to the key: link(2) fails if the name exists, which is the
// create-if-absent test and the commit in one atomic step. The directory is
// synced so that the new name survives a crash, and the temporary name is
// removed.
func (s *dirStore) Create(ctx context.Context, key string, _ ...PutOption) (Upload, error) {
	if err := checkKey(key); err != nil {
		return nil, fmt.Errorf("objstore: create: %w", err)
	}
	u, err := s.create(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("objstore: create %s: %w", s.location(key), err)
	}
	return u, nil
}

func (s *dirStore) create(ctx context.Context, key string) (*dirUpload, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	name := filepath.FromSlash(key)
	dir := filepath.Dir(name)
	if err := s.root.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	tmp := filepath.Join(dir, tempPrefix+rand.Text())
	f, err := s.root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, err
	}
	return &dirUpload{s: s, ctx: ctx, key: key, name: name, dir: dir, tmp: tmp, f: f}, nil
}

// dirUpload is an object being written to a temporary file.
type dirUpload struct {
	s       *dirStore
	ctx     context.Context // the Create context
	key     string
	name    string // the object's path under the root
	dir     string // its directory
	tmp     string // the temporary file's path under the root
	f       *os.File
	state   uploadState
	err     error // the first failure
	written int64
}

func (u *dirUpload) Written() int64 { return u.written }

func (u *dirUpload) Write(p []byte) (int, error) {
	if err := u.check(); err != nil {
		return 0, u.errorf("write", err)
	}
	n, err := u.f.Write(p)
	u.written += int64(n)
	if err != nil {
		return n, u.errorf("write", u.fail(err))
	}
	return n, nil
}

func (u *dirUpload) Commit(ctx context.Context) (Info, error) {
	if err := u.state.errFinished(); err != nil {
		return Info{}, u.errorf("commit", err)
	}
	info, err := u.commit(ctx)
	if err != nil {
		err = u.fail(err)
		if cerr := u.cleanup(); cerr != nil {
			err = errors.Join(err, cerr)
		} else {
			u.state = uploadAborted
		}
		return Info{}, u.errorf("commit", err)
	}
	u.state = uploadCommitted
	return info, nil
}

func (u *dirUpload) commit(ctx context.Context) (Info, error) {
	if err := u.check(); err != nil {
		return Info{}, err
	}
	if err := ctx.Err(); err != nil {
		return Info{}, err
	}
	if err := u.f.Sync(); err != nil {
		return Info{}, err
	}
	// The object will be this very file (a hard link shares its inode),
	// so its Info can be read now.
	fi, err := u.f.Stat()
	if err == nil {
		err = u.f.Close()
	} else {
		u.f.Close()
	}
	u.f = nil
	if err != nil {
		return Info{}, err
	}
	if err := u.s.root.Link(u.tmp, u.name); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return Info{}, fmt.Errorf("%w: %w", ErrExists, err)
		}
		return Info{}, err
	}
	if err := u.s.syncDir(u.dir); err != nil {
		// The new name may not survive a crash: take it back, as Commit
		// fails. The link was exclusive, so the name is ours alone.
		u.s.root.Remove(u.name)
		return Info{}, err
	}
	// The object is in place. A temporary name that cannot be removed now
	// (or is left by a crash here) is removed by AbortStaleUploads.
	u.s.root.Remove(u.tmp)
	return fileInfo(u.key, fi), nil
}

func (u *dirUpload) Abort(context.Context) error {
	switch u.state {
	case uploadCommitted, uploadAborted:
		return nil
	}
	u.fail(errors.New("upload aborted"))
	if err := u.cleanup(); err != nil {
		return u.errorf("abort", err)
	}
	u.state = uploadAborted
	return nil
}

// check reports why the upload cannot go on, if it cannot.
func (u *dirUpload) check() error {
	if err := u.state.errFinished(); err != nil {
		return err
	}
	if u.err != nil {
		return u.err
	}
	return u.ctx.Err()
}

// fail marks the upload failed by err, unless it had failed already, and
// returns the first failure.
func (u *dirUpload) fail(err error) error {
	u.state = uploadFailed
	if u.err == nil {
		u.err = err
	}
	return u.err
}

// cleanup closes and removes the temporary file.
func (u *dirUpload) cleanup() error {
	if u.f != nil {
		u.f.Close()
		u.f = nil
	}
	if err := u.s.root.Remove(u.tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

func (u *dirUpload) errorf(op string, err error) error {
	return fmt.Errorf("objstore: %s %s: %w", op, u.s.location(u.key), err)
}

func (s *dirStore) syncDir(dir string) error {
	d, err := s.root.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("syncing directory %s: %w", dir, err)
	}
	return nil
}

func (s *dirStore) Get(ctx context.Context, key string) (io.ReadCloser, Info, error) {
	f, info, err := s.open(ctx, key)
	if err != nil {
		return nil, Info{}, fmt.Errorf("objstore: get %s: %w", s.location(key), err)
	}
	return f, info, nil
}

func (s *dirStore) NewReaderAt(ctx context.Context, key string) (ReaderAt, error) {
	f, info, err := s.open(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("objstore: open %s: %w", s.location(key), err)
	}
	return fileReaderAt{f, info.Size}, nil
}

// fileReaderAt serves ranges straight from the open file.
type fileReaderAt struct {
	*os.File
	size int64
}

func (f fileReaderAt) Size() int64 { return f.size }

// open opens the object's file, which must be a regular file.
func (s *dirStore) open(ctx context.Context, key string) (*os.File, Info, error) {
	if err := ctx.Err(); err != nil {
		return nil, Info{}, err
	}
	if err := checkKey(key); err != nil {
		return nil, Info{}, err
	}
	f, err := s.root.Open(filepath.FromSlash(key))
	if err != nil {
		return nil, Info{}, notExist(err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, Info{}, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, Info{}, fmt.Errorf("%w: not a regular file", ErrNotExist)
	}
	return f, fileInfo(key, fi), nil
}

func (s *dirStore) Head(ctx context.Context, key string) (Info, error) {
	info, err := s.head(ctx, key)
	if err != nil {
		return Info{}, fmt.Errorf("objstore: head %s: %w", s.location(key), err)
	}
	return info, nil
}

func (s *dirStore) head(ctx context.Context, key string) (Info, error) {
	if err := ctx.Err(); err != nil {
		return Info{}, err
	}
	if err := checkKey(key); err != nil {
		return Info{}, err
	}
	fi, err := s.root.Stat(filepath.FromSlash(key))
	if err != nil {
		return Info{}, notExist(err)
	}
	if !fi.Mode().IsRegular() {
		return Info{}, fmt.Errorf("%w: not a regular file", ErrNotExist)
	}
	return fileInfo(key, fi), nil
}

// Delete removes the object's file. Directories left empty stay: removing
// them would race with a Create that has just made them.
func (s *dirStore) Delete(ctx context.Context, key string) error {
	if _, err := s.head(ctx, key); err != nil {
		if errors.Is(err, ErrNotExist) {
			return nil
		}
		return fmt.Errorf("objstore: delete %s: %w", s.location(key), err)
	}
	if err := s.root.Remove(filepath.FromSlash(key)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("objstore: delete %s: %w", s.location(key), err)
	}
	return nil
}

func (s *dirStore) List(ctx context.Context, prefix string) iter.Seq2[Info, error] {
	return func(yield func(Info, error) bool) {
		for e, err := range s.walk(ctx, prefix) {
			if err != nil {
				yield(Info{}, fmt.Errorf("objstore: list %s: %w", s.location(prefix), err))
				return
			}
			if strings.HasPrefix(e.Name(), tempPrefix) {
				continue
			}
			fi, err := e.Info()
			if errors.Is(err, fs.ErrNotExist) {
				continue // deleted since its directory was read
			}
			if err != nil {
				yield(Info{}, fmt.Errorf("objstore: list %s: %w", s.location(prefix), err))
				return
			}
			if !yield(fileInfo(e.key, fi), nil) {
				return
			}
		}
	}
}

// AbortStaleUploads removes temporary files older than olderThan, left by
// uploads that crashed before committing or aborting, in the directories
// that hold keys under prefix.
func (s *dirStore) AbortStaleUploads(ctx context.Context, prefix string, olderThan time.Duration) (int, error) {
	cutoff := time.Now().Add(-olderThan)
	removed := 0
	for e, err := range s.walk(ctx, prefix) {
		if err != nil {
			return removed, fmt.Errorf("objstore: cleaning %s: %w", s.location(prefix), err)
		}
		if !strings.HasPrefix(e.Name(), tempPrefix) {
			continue
		}
		fi, err := e.Info()
		if err != nil || !fi.ModTime().Before(cutoff) {
			continue // gone already, or maybe still being written
		}
		if err := s.root.Remove(filepath.FromSlash(e.key)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return removed, fmt.Errorf("objstore: cleaning %s: %w", s.location(prefix), err)
		}
		removed++
	}
	return removed, nil
}

// walkEntry is a regular file met by walk.
type walkEntry struct {
	fs.DirEntry
	key string // slash-separated path from the root
}

// walk yields the regular files whose keys start with prefix, and the
// temporary files of the directories it visits, in the byte order of their
// keys, as S3 lists keys. A directory's entries are visited sorted by name,
// a subdirectory's name taken with its trailing slash: "a/" sorts after
// "a.b", as the keys "a/x" and "a.b" do. It visits only directories that can
// hold keys starting with prefix. An error ends the walk.
func (s *dirStore) walk(ctx context.Context, prefix string) iter.Seq2[walkEntry, error] {
	// Start at the deepest directory that every matching key is under.
	start := ""
	if i := strings.LastIndexByte(prefix, '/'); i >= 0 {
		start = prefix[:i+1]
	}
	return func(yield func(walkEntry, error) bool) {
		s.walkDir(ctx, start, prefix, yield)
	}
}

// walkDir walks the directory dir ("" for the root, else ending in "/") and
// reports whether the walk goes on.
func (s *dirStore) walkDir(ctx context.Context, dir, prefix string, yield func(walkEntry, error) bool) bool {
	if err := ctx.Err(); err != nil {
		yield(walkEntry{}, err)
		return false
	}
	name := "."
	if dir != "" {
		name = filepath.FromSlash(strings.TrimSuffix(dir, "/"))
	}
	f, err := s.root.Open(name)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return true // nothing under this prefix
	}
	if err != nil {
		yield(walkEntry{}, err)
		return false
	}
	entries, err := f.ReadDir(-1)
	f.Close()
	if errors.Is(err, syscall.ENOTDIR) {
		return true // the prefix's "directory" is an object
	}
	if err != nil {
		yield(walkEntry{}, err)
		return false
	}
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(sortName(a), sortName(b)) })
	for _, d := range entries {
		key := dir + d.Name()
		switch {
		case d.IsDir():
			sub := key + "/"
			if strings.HasPrefix(sub, prefix) || strings.HasPrefix(prefix, sub) {
				if !s.walkDir(ctx, sub, prefix, yield) {
					return false
				}
			}
		case d.Type().IsRegular():
			if strings.HasPrefix(key, prefix) || strings.HasPrefix(d.Name(), tempPrefix) {
				if !yield(walkEntry{d, key}, nil) {
					return false
				}
			}
		}
	}
	return true
}

// sortName is the name a directory entry sorts by in key order.
func sortName(d fs.DirEntry) string {
	if d.IsDir() {
		return d.Name() + "/"
	}
	return d.Name()
}

func (s *dirStore) Close() error { return s.root.Close() }

// fileInfo describes an object file. Its ETag joins modification time and
// size: enough to tell replaced objects apart, without hashing the file.
func fileInfo(key string, fi fs.FileInfo) Info {
	return Info{
		Key:      key,
		Size:     fi.Size(),
		ETag:     strconv.FormatInt(fi.ModTime().UnixNano(), 16) + "-" + strconv.FormatInt(fi.Size(), 16),
		Modified: fi.ModTime(),
	}
}

// notExist adds ErrNotExist to file errors that mean it.
func notExist(err error) error {
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return fmt.Errorf("%w: %w", ErrNotExist, err)
	}
	return err
}
