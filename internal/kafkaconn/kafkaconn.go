// Package kafkaconn dials Kafka brokers for kafka-go's Transport and
// checks that the server answering is one before kafka-go decodes a byte.
//
// kafka-go sizes the arrays of a response by the counts it reads, before
// it reads their elements. A broker address that points at another kind
// of server (an HTTP port, a schema registry, an object store: a typo in
// kafka.brokers) answers kafka-go's first request, ApiVersions, with text
// whose bytes read as counts of hundreds of millions: an allocation of
// gigabytes, and the process dies out of memory instead of saying what is
// wrong. A guarded connection reads the whole first response itself (a
// Kafka broker's ApiVersions answer is a few hundred bytes) and refuses
// one that declares more than MaxFirstResponse bytes, or that ends before
// its declared size, with an error naming the address; after it, bytes
// pass through untouched.
package kafkaconn

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"time"
)

// MaxFirstResponse bounds the first response read on a connection: a
// broker's ApiVersions answer lists each API once, in a few bytes each.
const MaxFirstResponse = 1 << 20

// ErrNotKafka is the error of a connection whose server did not answer as
// a Kafka broker.
var ErrNotKafka = errors.New("not a Kafka broker")

// Dialer returns a dial function for kafka.Transport's Dial that guards
// each connection it makes. timeout bounds the TCP connect.
func Dialer(timeout time.Duration) func(ctx context.Context, network, address string) (net.Conn, error) {
	d := &net.Dialer{Timeout: timeout}
	return func(ctx context.Context, network, address string) (net.Conn, error) {
		c, err := d.DialContext(ctx, network, address)
		if err != nil {
			return nil, err
		}
		return &guarded{Conn: c, address: address}, nil
	}
}

// guarded is a connection whose first response is read whole and checked
// before any of it is returned.
type guarded struct {
	net.Conn
	address string
	checked bool
	first   []byte // the checked first response, being returned
	err     error  // the first response's verdict, returned from then on
}

func (g *guarded) Read(p []byte) (int, error) {
	if g.checked && len(g.first) == 0 {
		return g.Conn.Read(p)
	}
	if g.err != nil {
		return 0, g.err
	}
	if !g.checked {
		if err := g.readFirst(); err != nil {
			g.err = err
			return 0, err
		}
		g.checked = true
	}
	n := copy(p, g.first)
	g.first = g.first[n:]
	return n, nil
}

// readFirst reads the first response: its 4-byte size and that many
// bytes, honouring the deadline kafka-go set on the connection.
func (g *guarded) readFirst() error {
	var head [4]byte
	if _, err := io.ReadFull(g.Conn, head[:]); err != nil {
		return err // a closed or silent server: kafka-go reports it as it would
	}
	size := int32(binary.BigEndian.Uint32(head[:]))
	if size < 0 || size > MaxFirstResponse {
		return fmt.Errorf("%w at %s: its first reply declares %d bytes (it starts %q%s), where a broker answers ApiVersions in a few hundred; check kafka.brokers",
			ErrNotKafka, g.address, size, head[:], looksLike(head))
	}
	buf := make([]byte, 4+int(size))
	copy(buf, head[:])
	if _, err := io.ReadFull(g.Conn, buf[4:]); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return fmt.Errorf("%w at %s: its first reply ended before the %d bytes it declared; check kafka.brokers", ErrNotKafka, g.address, size)
		}
		return err
	}
	g.first = buf
	return nil
}

// looksLike names the protocol whose reply starts with head, when it is a
// common one.
func looksLike(head [4]byte) string {
	switch string(head[:]) {
	case "HTTP":
		return ": an HTTP server"
	case "SSH-":
		return ": an SSH server"
	}
	if head[0] == 0x15 && head[1] == 0x03 {
		return ": a TLS alert, so the broker expects TLS (kafka.tls)"
	}
	return ""
}
