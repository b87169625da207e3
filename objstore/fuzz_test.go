package objstore

import (
	"bytes"
	"io"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"
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

// FuzzPartReader: the parts partReader cuts are the stream, in order; every
// part but the last is full; no empty part follows a full one; and "more"
// is true exactly when bytes follow.
func FuzzPartReader(f *testing.F) {
	f.Add([]byte{}, uint8(1), false)
	f.Add([]byte("abc"), uint8(3), false)
	f.Add([]byte("abcdefg"), uint8(3), true)
	f.Add(bytes.Repeat([]byte{7}, 300), uint8(100), true)
	f.Fuzz(func(t *testing.T, data []byte, partSize uint8, trickle bool) {
		if partSize == 0 {
			return
		}
		var r io.Reader = bytes.NewReader(data)
		if trickle {
			r = iotest.OneByteReader(r)
		}
		pr := partReader{r: r}
		buf := make([]byte, partSize)
		var got []byte
		for i := 0; ; i++ {
			n, more, err := pr.next(buf)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, buf[:n]...)
			if more != (len(got) < len(data)) {
				t.Fatalf("part %d: more = %v with %d of %d bytes read", i, more, len(got), len(data))
			}
			if more && n != len(buf) {
				t.Fatalf("part %d: short part (%d of %d) before the end", i, n, len(buf))
			}
			if !more {
				if n == 0 && i > 0 {
					t.Fatalf("empty last part %d", i)
				}
				break
			}
		}
		if !bytes.Equal(got, data) {
			t.Fatalf("parts joined = %d bytes, want %d bytes", len(got), len(data))
		}
	})
}

// FuzzS3Params: URL parameters never panic the option parser, and accepted
// ones configure a valid part size.
func FuzzS3Params(f *testing.F) {
	for _, q := range []string{"", "region=eu-west-1&path_style=true", "part_size=5242880", "part_size=-1", "sse=aws:kms&sse_kms_key_id=k", "endpoint=http://x:1", "a=%zz"} {
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
		o := options{partSize: DefaultPartSize}
		if err := applyOptions(&o, opts); err != nil {
			return
		}
		if o.partSize < MinPartSize || o.partSize > MaxPartSize {
			t.Errorf("%q: part size %d accepted", raw, o.partSize)
		}
	})
}
