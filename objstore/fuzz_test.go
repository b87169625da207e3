package objstore

import (
	"net/url"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzCheckKey: every accepted key is a local, clean, slash-separated path
// that names no temporary file, so the directory store cannot be steered
// outside its root or onto its own temporary files.
func FuzzCheckKey(f *testing.F) {
	for _, k := range []string{"a", "a/b.parquet", "../x", "a/../b", "/a", "a/", "a//b", ".", "..", "a/./b", "x\x00", tempPrefix + "1", "a/.hidden", "…/ü"} {
		f.Add(k)
	}
	f.Fuzz(func(t *testing.T, key string) {
		if checkKey(key) != nil {
			return
		}
		if !filepath.IsLocal(filepath.FromSlash(key)) {
			t.Errorf("accepted key %q is not local", key)
		}
		if filepath.ToSlash(filepath.Clean(filepath.FromSlash(key))) != key {
			t.Errorf("accepted key %q is not clean", key)
		}
		if strings.Contains(key, tempPrefix) && (strings.HasPrefix(key, tempPrefix) || strings.Contains(key, "/"+tempPrefix)) {
			t.Errorf("accepted key %q names a temporary file", key)
		}
	})
}

// FuzzS3Params: URL parameters never panic the option parser, and accepted
// ones configure a valid part size.
func FuzzS3Params(f *testing.F) {
	for _, q := range []string{"", "region=eu-west-1&path_style=true", "part_size=5242880", "part_size=-1", "sse=aws:kms&sse_kms_key_id=k", "endpoint=http://x:1", "a=%zz", "conditional_writes=false"} {
		f.Add(q)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		q, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		opts, err := s3Params(q)
		if err != nil {
			return
		}
		o := defaultOptions()
		if err := applyOptions(&o, opts); err != nil {
			return
		}
		if o.partSize < MinPartSize || o.partSize > MaxPartSize {
			t.Errorf("%q: part size %d accepted", raw, o.partSize)
		}
	})
}
