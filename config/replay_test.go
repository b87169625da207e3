package config

import (
	"strings"
	"testing"
)

func TestParseReplay(t *testing.T) {
	tests := []struct {
		name string
		text string
		want string // a substring of the error; "" for none
	}{
		{"replay only", "kafka: {brokers: [127.0.0.1:9092]}\nstore: {url: file:///tmp/x}\n", ""},
		{"run config", "kafka: {brokers: [127.0.0.1:9092], group: g, topics: [t]}\nstore: {url: file:///tmp/x}\nformat: {type: variant}\n", ""},
		{"avro registry", "kafka: {brokers: [127.0.0.1:9092]}\nstore: {url: file:///tmp/x}\nformat: {type: avro, registry: {url: \"http://127.0.0.1:8081\"}}\n", ""},
		{"no brokers", "kafka: {client_id: x}\nstore: {url: file:///tmp/x}\n", "kafka.brokers: required"},
		{"no store", "kafka: {brokers: [127.0.0.1:9092]}\n", "store.url: required"},
		{"bad key", "kafka: {brokers: [127.0.0.1:9092], grup: g}\nstore: {url: file:///tmp/x}\n", "kafka.grup: unknown key"},
		{"bad type", "kafka: {brokers: [127.0.0.1:9092]}\nstore: {url: file:///tmp/x}\nformat: {type: xml}\n", "format.type"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := ParseReplay([]byte(tc.text), nil)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("error: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error %v, want one with %q", err, tc.want)
			case tc.want == "" && (len(c.Kafka.Brokers) != 1 || c.Store.URL != "file:///tmp/x"):
				t.Errorf("config %+v", c)
			}
		})
	}
	if _, err := Parse([]byte("kafka: {brokers: [127.0.0.1:9092]}\nstore: {url: file:///tmp/x}\n"), nil); err == nil {
		t.Error("Parse accepts a config without group, topics and format; the sink needs them")
	}
}
