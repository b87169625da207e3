package config

import (
	"strings"
	"testing"
)

// TestFreshnessFrom: table.freshness_from is timestamp (the default) or
// read, and the rendered config keeps it.
func TestFreshnessFrom(t *testing.T) {
	const tbl = "table: {format: iceberg, namespace: n, catalog: {type: sql, uri: 'sqlite:///x.db'}%s}\n"
	for _, c := range []struct {
		name, extra string
		read        bool
		err         string
	}{
		{"default", "", false, ""},
		{"timestamp", ", freshness_from: timestamp", false, ""},
		{"read", ", freshness_from: read", true, ""},
		{"READ", ", freshness_from: READ", true, ""},
		{"fetch", ", freshness_from: fetch", false, `table.freshness_from: "fetch" is not one of timestamp, read`},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := Parse([]byte(base+strings.Replace(tbl, "%s", c.extra, 1)), nil)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Errorf("error %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Table.FreshnessFromRead != c.read {
				t.Errorf("FreshnessFromRead = %v, want %v", cfg.Table.FreshnessFromRead, c.read)
			}
			again, err := Parse([]byte(cfg.Redacted()), nil)
			if err != nil {
				t.Fatalf("the rendered config: %v\n%s", err, cfg.Redacted())
			}
			if again.Table.FreshnessFromRead != c.read {
				t.Errorf("rendered and read again, FreshnessFromRead = %v:\n%s", again.Table.FreshnessFromRead, cfg.Redacted())
			}
		})
	}
}
