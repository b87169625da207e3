package config

import (
	"os"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestMaintenance reads table.maintenance: absent is off (on at its
// defaults with the default freshness target), present takes each key's
// default, and the example sets every key as written.
func TestMaintenance(t *testing.T) {
	const cat = "catalog: {type: sql, uri: 'sqlite:///x.db'}"
	tbl := func(s string) string { return base + "table: {format: iceberg, namespace: n, " + cat + s + "}\n" }
	for _, tc := range []struct {
		name, text string
		want       *Maintenance
	}{
		{"absent", tbl(", commit_interval: 30s"), nil},
		{"null", tbl(", commit_interval: 30s, maintenance: null"), nil},
		{"absent with the default cadence", tbl(""), &Maintenance{time.Hour, 20, 256 << 20, 100, 7 * 24 * time.Hour, 100, 1000, 3 * 24 * time.Hour}},
		{"off", tbl(", maintenance: {enabled: false, compact_every: 10m}"), nil},
		{"empty", tbl(", maintenance: {}"), &Maintenance{time.Hour, 20, 256 << 20, 100, 7 * 24 * time.Hour, 100, 1000, 3 * 24 * time.Hour}},
		{"issue", tbl(", maintenance: {compact_every: 1h, target_file_size: 256MiB, expire_snapshots_older_than: 7d, keep_snapshots: 100, remove_orphans_older_than: 3d}"),
			&Maintenance{time.Hour, 20, 256 << 20, 100, 7 * 24 * time.Hour, 100, 1000, 3 * 24 * time.Hour}},
		{"every key", tbl(", maintenance: {compact_every: 10m, small_files_above: 0, target_file_size: 64MB, rewrite_manifests_above: 0, expire_snapshots_older_than: 1d12h, keep_snapshots: 5, max_snapshots: 50, remove_orphans_older_than: 90m}"),
			&Maintenance{10 * time.Minute, 0, 64_000_000, 0, 36 * time.Hour, 5, 50, 90 * time.Minute}},
		{"no bound", tbl(", maintenance: {max_snapshots: 0}"), &Maintenance{time.Hour, 20, 256 << 20, 100, 7 * 24 * time.Hour, 100, 0, 3 * 24 * time.Hour}},
		{"keep above the default bound", tbl(", maintenance: {keep_snapshots: 2000}"), &Maintenance{time.Hour, 20, 256 << 20, 100, 7 * 24 * time.Hour, 2000, 2000, 3 * 24 * time.Hour}},
		{"short schedule", base + "rotate: {interval: 1s}\ntable: {format: iceberg, namespace: n, " + cat + ", commit_interval: 1s, maintenance: {compact_every: 2s, remove_orphans_older_than: 64s}}\n",
			&Maintenance{2 * time.Second, 20, 256 << 20, 100, 7 * 24 * time.Hour, 100, 1000, 64 * time.Second}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse([]byte(tc.text), nil)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(c.Table.Maintenance, tc.want) {
				t.Errorf("maintenance = %+v, want %+v", c.Table.Maintenance, tc.want)
			}
			// The logged configuration shows it, and loads back the same.
			out := c.Redacted()
			c2, err := Parse([]byte(out), nil)
			if err != nil {
				t.Fatalf("Parse(Redacted()): %v\n%s", err, out)
			}
			if !reflect.DeepEqual(c2.Table.Maintenance, tc.want) {
				t.Errorf("maintenance rendered as\n%s\nloads back as %+v", out, c2.Table.Maintenance)
			}
		})
	}
}

func TestMaintenanceInvalid(t *testing.T) {
	const cat = "catalog: {type: sql, uri: 'sqlite:///x.db'}"
	tbl := func(s string) string {
		return base + "table: {format: iceberg, namespace: n, " + cat + ", maintenance: {" + s + "}}\n"
	}
	for _, tc := range []struct {
		name, text, want string
	}{
		{"compact_every", tbl("compact_every: 10ms"), "table.maintenance.compact_every: must be at least 1s"},
		{"target", tbl("target_file_size: 1KiB"), "table.maintenance.target_file_size: must be at least 1MiB"},
		{"small files", tbl("small_files_above: -3"), "table.maintenance.small_files_above: must not be negative, got -3"},
		{"manifests", tbl("rewrite_manifests_above: -1"), "table.maintenance.rewrite_manifests_above: must not be negative, got -1"},
		{"days", tbl("expire_snapshots_older_than: 7days"), `table.maintenance.expire_snapshots_older_than: want a duration like 7d, 36h or 90m, got "7days"`},
		{"keep", tbl("keep_snapshots: 0"), "table.maintenance.keep_snapshots: "},
		{"max below keep", tbl("max_snapshots: 50"), "table.maintenance.max_snapshots: 50 is less than keep_snapshots (100)"},
		{"max negative", tbl("max_snapshots: -1"), "table.maintenance.max_snapshots: "},
		// The defaults: the default freshness target's commit_interval 1s
		// and rotate.interval 5s.
		{"orphans too young", tbl("remove_orphans_older_than: 1m"),
			"table.maintenance.remove_orphans_older_than: 1m is too short: a file may be committed up to table.commit_interval (1s) after its upload, and uploaded again up to rotate.interval (5s) after a restart; want at least 72s"},
		// commit_interval 30s given, rotate.interval's own default 10m.
		{"orphans too young, 30s", base + "table: {format: iceberg, namespace: n, " + cat + ", commit_interval: 30s, maintenance: {remove_orphans_older_than: 21m}}\n",
			"table.maintenance.remove_orphans_older_than: 21m is too short: a file may be committed up to table.commit_interval (30s) after its upload, and uploaded again up to rotate.interval (10m) after a restart; want at least 22m"},
		{"orphans no interval", base + "rotate: {interval: 0, records: 10}\ntable: {format: iceberg, namespace: n, " + cat + ", maintenance: {remove_orphans_older_than: 12h}}\n",
			"want at least 1d"},
		{"orphans just short", base + "rotate: {interval: 1s}\ntable: {format: iceberg, namespace: n, " + cat + ", commit_interval: 1s, maintenance: {remove_orphans_older_than: 63s}}\n",
			"want at least 64s"},
		{"unknown", tbl("expire_every: 1h"), "table.maintenance.expire_every: unknown key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.text), nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}

func TestParseAge(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
		bad  bool
	}{
		{in: "7d", want: 7 * 24 * time.Hour},
		{in: "3d12h", want: 84 * time.Hour},
		{in: "0d", want: 0},
		{in: "36h", want: 36 * time.Hour},
		{in: "90m", want: 90 * time.Minute},
		{in: "d", bad: true},
		{in: "1d-1h", bad: true},
		{in: "1.5d", bad: true},
		{in: "99999999999d", bad: true},
	} {
		got, err := ParseAge(tc.in)
		if (err != nil) != tc.bad || !tc.bad && got != tc.want {
			t.Errorf("ParseAge(%q) = %v, %v", tc.in, got, err)
		}
	}
}

// TestDocsCoverMaintenance: docs/configuration.md documents every key of
// table.maintenance.
func TestDocsCoverMaintenance(t *testing.T) {
	doc, err := os.ReadFile("../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range maintenanceKeys {
		if !strings.Contains(string(doc), "`table.maintenance."+k+"`") {
			t.Errorf("docs/configuration.md does not document `table.maintenance.%s`", k)
		}
	}
}
