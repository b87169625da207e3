// Package fakeregistry is a Schema Registry for tests: an httptest server
// that answers GET /schemas/ids/{id} with the schemas it holds, and 404
// (error code 40403) for the others, as Confluent's does.
package fakeregistry

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/pqsink/pqsink/internal/schemaregistry"
)

// Schema is a schema the registry holds: its type (AVRO, PROTOBUF,
// JSON) and text.
type Schema struct {
	Type string
	Text string
}

// Start starts a registry of schemas by id, closed when t ends, and
// returns its URL.
func Start(t testing.TB, schemas map[uint32]Schema) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/vnd.schemaregistry.v1+json")
		id, err := strconv.ParseUint(strings.TrimPrefix(r.URL.Path, "/schemas/ids/"), 10, 32)
		s, ok := schemas[uint32(id)]
		if r.Method != http.MethodGet || !strings.HasPrefix(r.URL.Path, "/schemas/ids/") || err != nil || !ok {
			w.WriteHeader(http.StatusNotFound)
			_ = json.NewEncoder(w).Encode(map[string]any{"error_code": 40403, "message": fmt.Sprintf("Schema %s not found", r.URL.Path)})
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"schemaType": s.Type, "schema": s.Text})
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// Wire returns body in the Confluent wire format of schema id: magic
// byte 0, the id big-endian, then extra (Protobuf's message indexes)
// and body.
func Wire(id uint32, extra, body []byte) []byte {
	out := make([]byte, schemaregistry.WireHeaderSize, schemaregistry.WireHeaderSize+len(extra)+len(body))
	binary.BigEndian.PutUint32(out[1:], id)
	return append(append(out, extra...), body...)
}
