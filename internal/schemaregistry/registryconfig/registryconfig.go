// Package registryconfig builds pqsink's one Schema Registry client
// (internal/schemaregistry) from the format.registry section of the
// config: its credentials, CA file and timeout, and the number of schemas
// a format keeps. The registry formats read their schemas with the client
// and replay registers schemas with it. It is apart from the client so
// that the client, which the formats import, depends on no config.
package registryconfig

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/pqsink/pqsink/config"
	"github.com/pqsink/pqsink/internal/schemaregistry"
)

// DefaultCacheSize is the number of schemas a format keeps by id when
// format.registry.cache_size is not set.
const DefaultCacheSize = 1000

// CacheSize returns the number of schemas a format keeps by id:
// format.registry.cache_size, or DefaultCacheSize when it is not set.
func CacheSize(c *config.Registry) int {
	if c == nil || c.CacheSize == 0 {
		return DefaultCacheSize
	}
	return c.CacheSize
}

// New returns the client of the registry c describes. A zero Timeout
// takes the config's default (10s); a CAFile replaces the system's roots
// for https and asks for TLS 1.2 at least.
func New(c *config.Registry) (*schemaregistry.Client, error) {
	if c == nil || c.URL == "" {
		return nil, errors.New("format.registry.url: required to read or register schemas in a Schema Registry (format.type avro, or protobuf and json_schema with a registry)")
	}
	if c.CacheSize < 0 {
		return nil, fmt.Errorf("format.registry: schema registry: cache size %d, want at least 1", c.CacheSize)
	}
	opts := []schemaregistry.Option{schemaregistry.Timeout(c.Timeout)}
	if c.Timeout == 0 {
		opts[0] = schemaregistry.Timeout(10 * time.Second)
	}
	if c.Username != "" || c.Password.Value() != "" {
		opts = append(opts, schemaregistry.BasicAuth(c.Username, c.Password.Value()))
	}
	if c.CAFile != "" {
		pem, err := os.ReadFile(c.CAFile)
		if err != nil {
			return nil, fmt.Errorf("format.registry.ca_file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("format.registry.ca_file %s: no PEM certificate in it", c.CAFile)
		}
		opts = append(opts, schemaregistry.TLS(&tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}))
	}
	reg, err := schemaregistry.New(c.URL, opts...)
	if err != nil {
		return nil, fmt.Errorf("format.registry: %w", err)
	}
	return reg, nil
}
