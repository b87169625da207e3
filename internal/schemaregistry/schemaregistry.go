// Package schemaregistry builds pqsink's one Schema Registry client,
// schema/avro's Registry, from the format.registry section of the config:
// its credentials, CA file, cache size and timeout. The sink reads writer
// schemas with it and replay registers the schemas of Avro files with it.
package schemaregistry

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/pqsink/pqsink/config"
	"github.com/pqsink/pqsink/schema/avro"
)

// New returns the client of the registry c describes. A zero CacheSize or
// Timeout takes the config's default (1000 schemas, 10s); a CAFile
// replaces the system's roots for https and asks for TLS 1.2 at least.
func New(c *config.Registry) (*avro.Registry, error) {
	if c == nil || c.URL == "" {
		return nil, errors.New("format.registry.url: required when format.type is avro")
	}
	opts := []avro.RegistryOption{avro.CacheSize(c.CacheSize), avro.RegistryTimeout(c.Timeout)}
	if c.CacheSize == 0 {
		opts[0] = avro.CacheSize(1000)
	}
	if c.Timeout == 0 {
		opts[1] = avro.RegistryTimeout(10 * time.Second)
	}
	if c.Username != "" || c.Password.Value() != "" {
		opts = append(opts, avro.BasicAuth(c.Username, c.Password.Value()))
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
		opts = append(opts, avro.RegistryTLS(&tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}))
	}
	reg, err := avro.NewRegistry(c.URL, opts...)
	if err != nil {
		return nil, fmt.Errorf("format.registry: %w", err)
	}
	return reg, nil
}
