package kafkaconn

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	kafkatest "github.com/pqsink/pqsink/internal/testutil/kafka"
)

// metadata asks addr for the metadata of topic t through a guarded
// transport.
func metadata(t *testing.T, addr string) error {
	t.Helper()
	tr := &kafka.Transport{Dial: Dialer(5 * time.Second), DialTimeout: 5 * time.Second}
	t.Cleanup(tr.CloseIdleConnections)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err := (&kafka.Client{Addr: kafka.TCP(addr), Transport: tr}).Metadata(ctx, &kafka.MetadataRequest{Topics: []string{"t"}})
	return err
}

// TestBroker: a real broker is answered through the guard as without it.
func TestBroker(t *testing.T) {
	broker := kafkatest.Start(t, 3, "t")
	if err := metadata(t, broker.Brokers[0]); err != nil {
		t.Fatal(err)
	}
}

// TestNotKafka: servers that are no broker are refused with ErrNotKafka
// naming what answered, and nothing is decoded from their bytes (an HTTP
// reply, decoded by kafka-go, asks for gigabytes).
func TestNotKafka(t *testing.T) {
	httpServer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "not kafka", http.StatusBadRequest)
	}))
	defer httpServer.Close()
	short := serve(t, func(c net.Conn) {
		c.Write([]byte{0, 0, 0, 100, 1, 2, 3}) // declares 100 bytes, sends 3
	})
	huge := serve(t, func(c net.Conn) {
		c.Write([]byte{0x7f, 0, 0, 0})
	})
	negative := serve(t, func(c net.Conn) {
		c.Write([]byte{0xff, 0xff, 0xff, 0xf0})
	})
	for _, c := range []struct {
		name, addr, want string
	}{
		{"http", strings.TrimPrefix(httpServer.URL, "http://"), "an HTTP server"},
		{"short", short, "ended before the 100 bytes it declared"},
		{"huge", huge, "declares 2130706432 bytes"},
		{"negative", negative, "declares -16 bytes"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := metadata(t, c.addr)
			if !errors.Is(err, ErrNotKafka) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), c.addr) {
				t.Errorf("error %v, want ErrNotKafka with %q and the address", err, c.want)
			}
		})
	}
}

// serve accepts connections on a local port and answers each with reply
// after reading what the client sends first, then holds it until the test
// ends.
func serve(t *testing.T, reply func(net.Conn)) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { close(done); l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				buf := make([]byte, 4096)
				if _, err := c.Read(buf); err != nil {
					return
				}
				reply(c)
				if tc, ok := c.(*net.TCPConn); ok {
					tc.CloseWrite()
				}
				<-done
			}()
		}
	}()
	return l.Addr().String()
}
