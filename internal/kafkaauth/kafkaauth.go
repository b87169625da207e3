// Package kafkaauth turns the kafka section's SASL and TLS settings into
// what kafka-go's transports take, for the sink and replay alike.
package kafkaauth

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"

	"github.com/segmentio/kafka-go/sasl"
	"github.com/segmentio/kafka-go/sasl/plain"
	"github.com/segmentio/kafka-go/sasl/scram"

	"github.com/pqsink/pqsink/config"
)

// SASL builds the SASL mechanism of the config, or nil.
func SASL(c *config.SASL) (sasl.Mechanism, error) {
	if c == nil {
		return nil, nil
	}
	switch c.Mechanism {
	case "PLAIN":
		return plain.Mechanism{Username: c.Username, Password: c.Password.Value()}, nil
	case "SCRAM-SHA-256":
		return scram.Mechanism(scram.SHA256, c.Username, c.Password.Value())
	case "SCRAM-SHA-512":
		return scram.Mechanism(scram.SHA512, c.Username, c.Password.Value())
	}
	return nil, fmt.Errorf("kafka.sasl.mechanism: %q is not one of PLAIN, SCRAM-SHA-256, SCRAM-SHA-512", c.Mechanism)
}

// TLS builds the TLS settings of the config, or nil.
func TLS(c *config.TLS) (*tls.Config, error) {
	if c == nil {
		return nil, nil
	}
	t := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: c.InsecureSkipVerify, ServerName: c.ServerName}
	if c.CAFile != "" {
		pem, err := os.ReadFile(c.CAFile)
		if err != nil {
			return nil, fmt.Errorf("kafka.tls.ca_file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("kafka.tls.ca_file %s: no PEM certificate in it", c.CAFile)
		}
		t.RootCAs = pool
	}
	if c.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(c.CertFile, c.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("kafka.tls.cert_file/key_file: %w", err)
		}
		t.Certificates = []tls.Certificate{cert}
	}
	return t, nil
}
