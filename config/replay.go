package config

import (
	"fmt"
	"os"
	"path/filepath"
)

// replayOptional are the keys `pqsink run` requires and `pqsink replay`
// does not use: replay needs only the kafka connection (brokers, client
// id, SASL, TLS), the store's endpoint and credentials, and, to replay
// Avro files, format.registry.
var replayOptional = []string{"kafka.group", "kafka.topics", "format.type", "format.schema_file", "format.registry"}

// LoadReplay reads a config file for `pqsink replay`: Load, except that the
// keys only the sink needs (kafka.group, kafka.topics, format.type and what
// it requires) may be left out. Every key given is validated as Load
// validates it, so the sink's config file serves replay as it is.
func LoadReplay(path string, env func(string) (string, bool)) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	return parse(data, env, filepath.Dir(abs), replayOptional)
}

// ParseReplay is LoadReplay of data, with relative paths resolved against
// the working directory.
func ParseReplay(data []byte, env func(string) (string, bool)) (*Config, error) {
	dir, err := os.Getwd()
	if err != nil {
		return nil, fmt.Errorf("config: resolving relative paths: %w", err)
	}
	return parse(data, env, dir, replayOptional)
}
