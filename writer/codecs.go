package writer

import (
	"sync"

	"github.com/pqsink/pqsink/compress"
)

// Codecs is a set of compression codecs that many writers share. A codec
// holds costly state (a ZSTD encoder is megabytes of tables and windows),
// and every codec is safe for concurrent use, so a process that keeps many
// files open at once, such as the sink with one file per partition and
// path, builds each codec once instead of once per file. Codecs is safe for
// concurrent use.
type Codecs struct {
	mu sync.Mutex
	m  map[codecKey]compress.Codec
}

// NewCodecs returns an empty set.
func NewCodecs() *Codecs { return &Codecs{m: map[codecKey]compress.Codec{}} }

// get returns the codec of key, building it on first use.
func (c *Codecs) get(key codecKey) (compress.Codec, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if codec, ok := c.m[key]; ok {
		return codec, nil
	}
	var opts []compress.Option
	if key.level != 0 {
		opts = append(opts, compress.Level(key.level))
	}
	codec, err := compress.New(key.codec, opts...)
	if err != nil {
		return nil, err
	}
	c.m[key] = codec
	return codec, nil
}

// SharedCodecs makes the writer take its codecs from c, shared with the
// other writers given the same set. Defaults to a set of the writer's own.
func SharedCodecs(c *Codecs) Option {
	return func(cfg *config) error {
		cfg.codecs = c
		return nil
	}
}
