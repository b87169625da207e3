package config

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

func TestSecretPrinting(t *testing.T) {
	s := Secret("hunter2")
	if s.Value() != "hunter2" {
		t.Errorf("Value() = %q", s.Value())
	}
	for _, verb := range []string{"%v", "%+v", "%s", "%q", "%x", "%X", "%d", "%t", "%10s", "%-20v", "%#v"} {
		got := fmt.Sprintf(verb, s)
		if strings.Contains(got, "hunter2") || strings.Contains(got, fmt.Sprintf("%x", "hunter2")) || strings.Contains(got, fmt.Sprintf("%X", "hunter2")) {
			t.Errorf("Sprintf(%q) = %q leaks the secret", verb, got)
		}
		if !strings.Contains(got, redacted) {
			t.Errorf("Sprintf(%q) = %q, want %s", verb, got, redacted)
		}
	}
	if got := fmt.Sprintf("%#v", s); got != `config.Secret("[redacted]")` {
		t.Errorf("%%#v = %s", got)
	}
	if got := fmt.Sprint(Secret("")); got != "" {
		t.Errorf("empty Secret prints %q", got)
	}
	if b, _ := json.Marshal(struct{ P Secret }{s}); string(b) != `{"P":"[redacted]"}` {
		t.Errorf("json = %s", b)
	}
	if b, _ := yaml.Marshal(struct{ P Secret }{s}); strings.Contains(string(b), "hunter2") {
		t.Errorf("yaml = %s", b)
	}
}

const secretValue = "s3cr3t-VALUE"

// TestSecretsNeverLeak loads configs whose secrets are also wrong in some
// way, and checks that no error message, and no printing of the loaded
// config, shows them.
func TestSecretsNeverLeak(t *testing.T) {
	env := envOf(map[string]string{"PW": secretValue, "SK": secretValue})
	check := func(t *testing.T, what, s string) {
		t.Helper()
		for _, part := range []string{secretValue, "s3cr3t", fmt.Sprintf("%x", secretValue)} {
			if strings.Contains(s, part) {
				t.Errorf("%s leaks the secret:\n%s", what, s)
			}
		}
	}

	bad := []string{
		// wrong types
		"kafka: {brokers: [b:9092], group: g, topics: [t], sasl: {mechanism: PLAIN, username: u, password: [" + secretValue + "]}}\n" + storeOK + formatOK,
		"kafka: {brokers: [b:9092], group: g, topics: [t], sasl: {mechanism: PLAIN, username: u, password: {" + secretValue + ": 1}}}\n" + storeOK + formatOK,
		"kafka: {brokers: [b:9092], group: g, topics: [t], sasl: 'PLAIN:u:" + secretValue + "'}\n" + storeOK + formatOK,
		"kafka: {brokers: [b:9092], group: g, topics: [t], sasl: [PLAIN, u, " + secretValue + "]}\n" + storeOK + formatOK,
		kafkaOK + "store: {url: 's3://b', access_key: a, secret_key: [" + secretValue + "]}\n" + formatOK,
		kafkaOK + "store: 's3://b " + secretValue + "'\n" + formatOK,
		kafkaOK + "store: {url: 's3://b', access_key: a, secret_key: x, session_token: {t: " + secretValue + "}}\n" + formatOK,
		// bad expansions
		kafkaOK + "store: {url: 's3://b', access_key: a, secret_key: '" + secretValue + "${'}\n" + formatOK,
		kafkaOK + "store: {url: 's3://b', access_key: a, secret_key: '" + secretValue + "${NOPE}'}\n" + formatOK,
		kafkaOK + "store: {url: 's3://b', access_key: a, secret_key: '${" + secretValue + "}'}\n" + formatOK,
		kafkaOK + "store: {url: 's3://b', access_key: a, secret_key: '${X:-" + secretValue + "'}\n" + formatOK,
		kafkaOK + "store: {url: 's3://b', access_key: a, secret_key: x, session_token: '" + secretValue + "${}'}\n" + formatOK,
		// secret where it does not belong, or beside other problems
		kafkaOK + "store: {url: 's3://b', secret_key: '${SK}'}\n" + formatOK,
		kafkaOK + "store: {url: 's3://b', session_token: '${SK}'}\n" + formatOK,
		kafkaOK + "store: {url: 's3://b', access_key: a, secret_key: x, secret_kye: " + secretValue + "}\n" + formatOK,
		kafkaOK + "store: {url: 's3://b', access_key: a, secret_key: " + secretValue + ", secret_key: " + secretValue + "}\n" + formatOK,
		kafkaOK + "store: {url: 's3://ak:" + secretValue + "@bucket/x', access_key: a, secret_key: '${SK}'}\n" + formatOK,
		kafkaOK + "store: {url: 's3://ak:" + secretValue + "@bucket/%zz'}\n" + formatOK,
		kafkaOK + "store: {url: 's3://b', endpoint: 'http://ak:" + secretValue + "@host:9000'}\n" + formatOK,
		"kafka: {brokers: [b:9092], group: g, topics: [t], sasl: {mechanism: OAUTH, username: u, password: '${PW}'}}\n" + storeOK + formatOK + "rotate: {records: x}\n",
		// YAML syntax errors around a secret
		kafkaOK + "store: {url: 's3://b', access_key: a, secret_key: \"" + secretValue + "\\q\"}\n" + formatOK,
		kafkaOK + "store:\n  url: s3://b\n  secret_key: '" + secretValue + "\n",
		kafkaOK + "store:\n  url: s3://b\n  secret_key: " + secretValue + ": x\n",
		kafkaOK + "store:\n  url: s3://b\n  secret_key: *" + secretValue + "\n",
	}
	for i, text := range bad {
		_, err := Parse([]byte(text), env)
		if err == nil {
			t.Errorf("case %d: no error for\n%s", i, text)
			continue
		}
		check(t, fmt.Sprintf("case %d error", i), err.Error())
	}

	// A good config, printed every way.
	dir := t.TempDir()
	path := filepath.Join(dir, "c.yaml")
	text := `
kafka:
  brokers: [b:9092]
  group: g
  topics: [t]
  sasl: {mechanism: SCRAM-SHA-512, username: u, password: "${PW}"}
store: {url: "s3://b", access_key: a, secret_key: "${SK}", session_token: "` + secretValue + `"}
format: {type: variant}
`
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Load(path, env)
	if err != nil {
		t.Fatal(err)
	}
	if c.Kafka.SASL.Password.Value() != secretValue || c.Store.SecretKey.Value() != secretValue || c.Store.SessionToken.Value() != secretValue {
		t.Fatalf("secrets not loaded: %q %q %q", c.Kafka.SASL.Password.Value(), c.Store.SecretKey.Value(), c.Store.SessionToken.Value())
	}
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%d"} {
		check(t, "Sprintf "+verb+" of *Config", fmt.Sprintf(verb, c))
		check(t, "Sprintf "+verb+" of Config", fmt.Sprintf(verb, *c))
		check(t, "Sprintf "+verb+" of SASL", fmt.Sprintf(verb, *c.Kafka.SASL))
		check(t, "Sprintf "+verb+" of Store", fmt.Sprintf(verb, c.Store))
		check(t, "Sprintf "+verb+" of []*Config", fmt.Sprintf(verb, []*Config{c}))
		check(t, "Sprintf "+verb+" of a struct holding pointers", fmt.Sprintf(verb, struct {
			C *Config
			K *Kafka
			S *SASL
			T *Store
		}{c, &c.Kafka, c.Kafka.SASL, &c.Store}))
	}
	check(t, "Redacted", c.Redacted())
	if b, err := json.Marshal(c); err != nil {
		t.Error(err)
	} else {
		check(t, "json", string(b))
	}
	if b, err := yaml.Marshal(c); err != nil {
		t.Error(err)
	} else {
		check(t, "yaml", string(b))
	}
}

// TestRedactedRoundTrip: the rendered config loads back to the same
// Config, secrets aside.
func TestRedactedRoundTrip(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, "ca.pem", "cert.pem", "key.pem", "events.schema")
	env := envOf(map[string]string{"DIR": dir})
	for _, text := range []string{
		base,
		kafkaOK + "store: {url: 's3://b/p', access_key: a, secret_key: s, session_token: tok}\nformat: {type: json, schema_file: '${DIR}/events.schema'}\n",
		`
kafka:
  brokers: [b:9092, 'c:9093']
  group: "a$$b"
  topic_regex: '^x\..*$'
  start: latest
  sasl: {mechanism: PLAIN, username: u, password: p}
  tls: {ca_file: '${DIR}/ca.pem', cert_file: '${DIR}/cert.pem', key_file: '${DIR}/key.pem', server_name: k}
  fetch: {min_bytes: 1000, max_bytes: 3MiB, max_wait: 1500ms}
store: {url: 'file:///data', conditional_writes: false}
format: {type: variant, column: doc, shred: none, shred_sample: 7}
envelope: false
path: "{topic}/{record_time:2006/01/02}/{partition}-{first_offset}"
time_field: ts
timezone: America/New_York
rotate: {records: 0, bytes: 1000, interval: 90m, schedule: 48h}
parquet: {codec: 'gzip:9', bloom_filters: ['a.b:0.05', c], page_version: 2, stats_truncate: 0}
memory: {limit: 100MiB}
metrics: {listen: 'localhost:9102'}
log: {format: json, level: warn}
shutdown: abandon
shutdown_timeout: 45s
max_record_bytes: 1MiB
errors: skip
`,
	} {
		c, err := Parse([]byte(text), env)
		if err != nil {
			t.Fatalf("Parse: %v\n%s", err, text)
		}
		out := c.Redacted()
		c2, err := Parse([]byte(out), nil)
		if err != nil {
			t.Fatalf("Parse(Redacted()): %v\n%s", err, out)
		}
		// Only the secrets differ.
		if c.Kafka.SASL != nil {
			if c2.Kafka.SASL.Password.Value() != redacted {
				t.Errorf("password rendered as %q", c2.Kafka.SASL.Password.Value())
			}
			c2.Kafka.SASL.Password = c.Kafka.SASL.Password
		}
		for _, p := range []struct{ got, want *Secret }{{&c2.Store.SecretKey, &c.Store.SecretKey}, {&c2.Store.SessionToken, &c.Store.SessionToken}} {
			if p.want.Value() != "" && p.got.Value() != redacted {
				t.Errorf("secret rendered as %q", p.got.Value())
			}
			*p.got = *p.want
		}
		if !reflect.DeepEqual(c, c2) {
			t.Errorf("round trip changed the config:\n got %+v\nwant %+v\nvia\n%s", c2, c, out)
		}
	}
}

func TestRedactedText(t *testing.T) {
	c, err := Parse([]byte(base), nil)
	if err != nil {
		t.Fatal(err)
	}
	out := c.Redacted()
	for _, want := range []string{
		"kafka:\n  brokers: ['b:9092']\n  group: g\n  topics: [t]\n  start: earliest\n",
		"  bytes: 256MiB\n  interval: 10m\n",
		"format:\n  type: variant\n  column: payload\n  shred: auto\n  shred_sample: 10000\n",
		"path: '{topic}/{topic}+{partition}+{first_offset}.parquet'\n",
		"errors: fail\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("Redacted() lacks %q:\n%s", want, out)
		}
	}
}
