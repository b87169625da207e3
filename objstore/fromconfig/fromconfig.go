// Package fromconfig opens an object store from a config's store section,
// one way for every command: the sink, replay, compact and inspect of a
// table agree on which settings apply to which kind of store.
package fromconfig

import (
	"context"
	"fmt"
	"strings"

	"github.com/pqsink/pqsink/config"
	"github.com/pqsink/pqsink/objstore"
)

// Options are the objstore options that the store section c gives a store
// at url (s3://, gs://, azblob://, abfss:// or file://). url is usually
// c.URL; replay passes its --from, which is read with c's settings.
func Options(url string, c *config.Store) []objstore.Option {
	var opts []objstore.Option
	switch {
	case strings.HasPrefix(url, "s3://"):
		if c.Endpoint != "" {
			opts = append(opts, objstore.Endpoint(c.Endpoint))
		}
		if c.Region != "" {
			opts = append(opts, objstore.Region(c.Region))
		}
		opts = append(opts, objstore.PathStyle(c.PathStyle), objstore.MaxRetries(c.MaxRetries))
		opts = append(opts, maxRetryWait(c)...)
		opts = append(opts, partSize(c)...)
		if c.AccessKey != "" {
			opts = append(opts, objstore.StaticCredentials(c.AccessKey, c.SecretKey.Value(), c.SessionToken.Value()))
		}
		switch c.SSE {
		case "AES256":
			opts = append(opts, objstore.SSES3())
		case "aws:kms":
			opts = append(opts, objstore.SSEKMS(c.SSEKMSKeyID))
		}
		opts = append(opts, objstore.ConditionalWrites(c.ConditionalWrites))
	case strings.HasPrefix(url, "gs://"),
		strings.HasPrefix(url, "azblob://"), strings.HasPrefix(url, "abfss://"):
		// Credentials come from the environment: GCS's Application
		// Default Credentials (none for an http:// emulator endpoint);
		// AZURE_STORAGE_ACCOUNT and AZURE_STORAGE_KEY, a SAS token, or the
		// default Azure credential chain.
		if c.Endpoint != "" {
			opts = append(opts, objstore.Endpoint(c.Endpoint))
		}
		opts = append(opts, objstore.MaxRetries(c.MaxRetries))
		opts = append(opts, maxRetryWait(c)...)
		opts = append(opts, partSize(c)...)
	}
	return opts
}

// partSize is the part size option of c, none when c leaves it unset (a
// store section built by hand rather than loaded, which fills defaults).
func partSize(c *config.Store) []objstore.Option {
	if c.PartSize == 0 {
		return nil
	}
	return []objstore.Option{objstore.PartSize(int(c.PartSize))}
}

// maxRetryWait is the retry wait option of c, none when c leaves it unset
// (a store section built by hand).
func maxRetryWait(c *config.Store) []objstore.Option {
	if c.MaxRetryWait == 0 {
		return nil
	}
	return []objstore.Option{objstore.MaxRetryWait(c.MaxRetryWait)}
}

// Open opens the store at url with the settings of c, then extra.
func Open(ctx context.Context, url string, c *config.Store, extra ...objstore.Option) (objstore.Store, error) {
	s, err := objstore.Open(ctx, url, append(Options(url, c), extra...)...)
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	return s, nil
}
