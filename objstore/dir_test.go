package objstore

import (
	"context"
	"errors"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestDirStore(t *testing.T) {
	testStore(t, backend{
		name: "dir",
		open: func(t *testing.T, opts ...Option) Store {
			s, err := Open(context.Background(), (&url.URL{Scheme: "file", Path: filepath.ToSlash(t.TempDir())}).String(), opts...)
			if err != nil {
				t.Fatal(err)
			}
			return s
		},
		pending: func(t *testing.T, s Store, prefix string) []string {
			var tmp []string
			for e, err := range s.(*dirStore).walk(context.Background(), prefix) {
				if err != nil {
					t.Fatal(err)
				}
				if strings.HasPrefix(e.Name(), tempPrefix) {
					tmp = append(tmp, e.key)
				}
			}
			return tmp
		},
		startUpload: func(t *testing.T, s Store, key string) {
			ds := s.(*dirStore)
			dir := filepath.Join(ds.dir, filepath.FromSlash(key), "..")
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, tempPrefix+"crashed"), []byte("partial"), 0o644); err != nil {
				t.Fatal(err)
			}
		},
	})
}

// TestDirStoreStaysInside checks that no key reaches outside the root, even
// through a symlink planted inside it.
func TestDirStoreStaysInside(t *testing.T) {
	base := t.TempDir()
	rootDir, outside := filepath.Join(base, "root"), filepath.Join(base, "outside")
	if err := os.MkdirAll(outside, 0o755); err != nil {
		t.Fatal(err)
	}
	s, err := Open(context.Background(), "file://"+filepath.ToSlash(rootDir))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := os.Symlink(outside, filepath.Join(rootDir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := Put(ctx, s, "link/planted", strings.NewReader("x")); err == nil {
		t.Error("Put through a symlink to outside the root succeeded")
	}
	if _, _, err := s.Get(ctx, "link/secret"); err == nil {
		t.Error("Get through a symlink to outside the root succeeded")
	}
	if _, err := os.Stat(filepath.Join(outside, "planted")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a file appeared outside the root: %v", err)
	}
}

func TestDirStoreStaleAge(t *testing.T) {
	s, err := Open(context.Background(), "file://"+filepath.ToSlash(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ds := s.(*dirStore)
	old := filepath.Join(ds.dir, "p", tempPrefix+"old")
	young := filepath.Join(ds.dir, "p", tempPrefix+"young")
	for _, f := range []string{old, young} {
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	twoHoursAgo := time.Now().Add(-2 * time.Hour)
	if err := os.Chtimes(old, twoHoursAgo, twoHoursAgo); err != nil {
		t.Fatal(err)
	}
	n, err := s.AbortStaleUploads(context.Background(), "p/", time.Hour)
	if err != nil || n != 1 {
		t.Fatalf("AbortStaleUploads(1h) = %d, %v; want 1", n, err)
	}
	if _, err := os.Stat(old); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("stale temporary file still there: %v", err)
	}
	if _, err := os.Stat(young); err != nil {
		t.Errorf("young temporary file removed: %v", err)
	}
}

func TestOpenErrors(t *testing.T) {
	dir := filepath.ToSlash(t.TempDir())
	tests := []struct {
		url  string
		opts []Option
		want string
	}{
		{"az://bucket", nil, "unsupported scheme"},
		{"bucket/key", nil, "unsupported scheme"},
		{"file://host/dir", nil, "remote host"},
		{"file:///" + dir + "?x=1", nil, "no parameters"},
		{"file:relative", nil, "not absolute"},
		{"file://" + dir, []Option{PartSize(MinPartSize)}, "only to s3"},
		{"file://" + dir, []Option{Concurrency(2)}, "only to s3"},
		{"file://" + dir, []Option{MaxRetries(3)}, "only to s3"},
		{"file://" + dir, []Option{ConditionalWrites(false)}, "only to s3"},
		{"s3://b", []Option{Concurrency(0)}, "concurrency 0"},
		{"s3://b", []Option{Concurrency(MaxConcurrency + 1)}, "concurrency"},
		{"s3://b", []Option{MaxRetries(-1)}, "max retries -1"},
		{"s3://b", []Option{Buffers(nil)}, "nil pool"},
		{"s3://b?conditional_writes=perhaps", nil, "conditional_writes"},
		{"s3:///prefix", nil, "no bucket"},
		{"s3://b?regoin=x", nil, `unknown parameter "regoin"`},
		{"s3://b?part_size=1024", nil, "part size 1024"},
		{"s3://b?part_size=big", nil, "part_size"},
		{"s3://b?path_style=maybe", nil, "path_style"},
		{"s3://b?sse=DES", nil, "sse="},
		{"s3://b?sse_kms_key_id=k", nil, "needs sse=aws:kms"},
		{"s3://b?region=a&region=b", nil, "given 2 times"},
		{"s3://b?endpoint=localhost:9000", nil, "endpoint"},
		{"s3://b", []Option{PartSize(MaxPartSize + 1)}, "part size"},
		{"s3://b", []Option{StaticCredentials("", "secret", "")}, "static credentials"},
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
	}
}

// TestDirStoreRuntimeOptions: the options that the sink hands to any store
// are accepted by the directory store, which has no use for them.
func TestDirStoreRuntimeOptions(t *testing.T) {
	pool := newCountingPool(-1)
	s, err := Open(context.Background(), "file://"+filepath.ToSlash(t.TempDir()),
		Buffers(pool), OnRetry(func(string, int, error) { t.Error("the directory store retried") }))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	create(t, s, "k", []byte("x"))
	if pool.gets != 0 {
		t.Errorf("the directory store took %d buffers", pool.gets)
	}
}

// TestDirUploadTempFile: an upload in progress is a temporary file beside
// its key, which List does not show, and which Commit turns into the
// object without leaving the temporary name behind.
func TestDirUploadTempFile(t *testing.T) {
	s, err := Open(context.Background(), "file://"+filepath.ToSlash(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ds := s.(*dirStore)
	ctx := context.Background()
	up, err := s.Create(ctx, "p/k")
	if err != nil {
		t.Fatal(err)
	}
	defer up.Abort(ctx)
	if _, err := up.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(filepath.Join(ds.dir, "p"))
	if err != nil || len(entries) != 1 || !strings.HasPrefix(entries[0].Name(), tempPrefix) {
		t.Fatalf("directory holds %v (%v), want one temporary file", entries, err)
	}
	if got := listKeys(t, s, ""); len(got) != 0 {
		t.Errorf("List shows %q during the upload", got)
	}
	if _, err := up.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	entries, err = os.ReadDir(filepath.Join(ds.dir, "p"))
	if err != nil || len(entries) != 1 || entries[0].Name() != "k" {
		t.Errorf("after Commit, directory holds %v (%v), want only k", entries, err)
	}
}
