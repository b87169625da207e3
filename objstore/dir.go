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
		return nil, fmt.Errorf("objstore: %s: option %s applies only to s3:// stores", u.Redacted(), o.s3Only[0])
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

// Create writes to a temporary file in the key's directory, syncs it, and
// then hard-links it to the key: link(2) fails if the name exists, which is
// the create-if-absent test and the commit in one atomic step. The
// directory is synced so that the new name survives a crash.
func (s *dirStore) Create(ctx context.Context, key string, r io.Reader, _ ...PutOption) (Info, error) {
	if err := checkKey(key); err != nil {
		return Info{}, fmt.Errorf("objstore: create: %w", err)
	}
	info, err := s.create(ctx, key, r)
	if err != nil {
		return Info{}, fmt.Errorf("objstore: create %s: %w", s.location(key), err)
	}
	return info, nil
}

func (s *dirStore) create(ctx context.Context, key string, r io.Reader) (Info, error) {
	if err := ctx.Err(); err != nil {
		return Info{}, err
	}
	name := filepath.FromSlash(key)
	dir := filepath.Dir(name)
	if err := s.root.MkdirAll(dir, 0o755); err != nil {
		return Info{}, err
	}
	tmp := filepath.Join(dir, tempPrefix+rand.Text())
	f, err := s.root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return Info{}, err
	}
	// Whatever happens, the temporary name goes; after a successful link
	// the data lives on under the key.
	defer s.root.Remove(tmp)
	if _, err := io.Copy(f, contextReader{ctx, r}); err != nil {
		f.Close()
		return Info{}, fmt.Errorf("writing: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return Info{}, err
	}
	if err := f.Close(); err != nil {
		return Info{}, err
	}
	if err := ctx.Err(); err != nil {
		return Info{}, err
	}
	if err := s.root.Link(tmp, name); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return Info{}, fmt.Errorf("%w: %w", ErrExists, err)
		}
		return Info{}, err
	}
	if err := s.syncDir(dir); err != nil {
		return Info{}, err
	}
	fi, err := s.root.Stat(name)
	if err != nil {
		return Info{}, err
	}
	return fileInfo(key, fi), nil
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

// contextReader stops a copy when its context ends.
type contextReader struct {
	ctx context.Context
	r   io.Reader
}

func (c contextReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
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
// Creates that crashed before linking them, in the directories that hold
// keys under prefix.
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
