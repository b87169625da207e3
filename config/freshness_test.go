package config

import (
	"reflect"
	"strings"
	"testing"
	"time"
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

// TestFreshnessTarget: table.freshness_target derives commit_interval and
// rotate.interval, a key given explicitly stays, none of the three (nor
// rotate.schedule) given means DefaultFreshnessTarget, and the rendered
// config reads back the same.
func TestFreshnessTarget(t *testing.T) {
	const cat = "catalog: {type: sql, uri: 'sqlite:///x.db'}"
	for _, c := range []struct {
		name, rotate, extra string
		commit, interval    time.Duration
		err                 string
	}{
		{name: "none: the default target", commit: time.Second, interval: 5 * time.Second},
		{name: "commit_interval alone", extra: ", commit_interval: 30s", commit: 30 * time.Second, interval: 10 * time.Minute},
		{name: "rotate.interval alone", rotate: "rotate: {interval: 2m}\n", commit: 30 * time.Second, interval: 2 * time.Minute},
		{name: "rotate.schedule alone", rotate: "rotate: {schedule: 1h}\n", commit: 30 * time.Second, interval: 10 * time.Minute},
		{name: "rotate.records alone", rotate: "rotate: {records: 1000}\n", commit: time.Second, interval: 5 * time.Second},
		{name: "empty values count as absent", rotate: "rotate: {interval: ''}\n", extra: ", commit_interval: '', freshness_target: ''", commit: time.Second, interval: 5 * time.Second},
		{name: "10s", extra: ", freshness_target: 10s", commit: 2 * time.Second, interval: 6 * time.Second},
		{name: "5s", extra: ", freshness_target: 5s", commit: time.Second, interval: 2 * time.Second},
		{name: "shortest", extra: ", freshness_target: 4s", commit: time.Second, interval: time.Second},
		{name: "1m", extra: ", freshness_target: 1m", commit: 14 * time.Second, interval: 44 * time.Second},
		{name: "commit given", extra: ", freshness_target: 10s, commit_interval: 5s", commit: 5 * time.Second, interval: 3 * time.Second},
		{name: "rotate given", rotate: "rotate: {interval: 4s}\n", extra: ", freshness_target: 10s", commit: 4 * time.Second, interval: 4 * time.Second},
		{name: "rotate too long", rotate: "rotate: {interval: 1m}\n", extra: ", freshness_target: 10s", commit: time.Second, interval: time.Minute},
		{name: "both given", rotate: "rotate: {interval: 3s}\n", extra: ", freshness_target: 10s, commit_interval: 1s", commit: time.Second, interval: 3 * time.Second},
		{name: "too short", extra: ", freshness_target: 3s", err: "table.freshness_target: must be at least 4s"},
		{name: "not a duration", extra: ", freshness_target: 10", err: "table.freshness_target: want a duration"},
	} {
		t.Run(c.name, func(t *testing.T) {
			text := base + c.rotate + "table: {format: iceberg, namespace: n, " + cat + c.extra + "}\n"
			cfg, err := Parse([]byte(text), nil)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Errorf("error %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Table.CommitInterval != c.commit || cfg.Rotate.Interval != c.interval {
				t.Errorf("commit_interval %s, rotate.interval %s; want %s and %s", cfg.Table.CommitInterval, cfg.Rotate.Interval, c.commit, c.interval)
			}
			again, err := Parse([]byte(cfg.Redacted()), nil)
			if err != nil {
				t.Fatalf("the rendered config: %v\n%s", err, cfg.Redacted())
			}
			if again.Table.CommitInterval != c.commit || again.Rotate.Interval != c.interval || again.Table.FreshnessTarget != cfg.Table.FreshnessTarget {
				t.Errorf("rendered and read again: commit_interval %s, rotate.interval %s, target %s:\n%s", again.Table.CommitInterval, again.Rotate.Interval, again.Table.FreshnessTarget, cfg.Redacted())
			}
		})
	}
}

// TestFreshnessDefaultArchive: without a table, rotate.interval keeps its
// own default; the default target is the table's.
func TestFreshnessDefaultArchive(t *testing.T) {
	cfg, err := Parse([]byte(base), nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Table != nil || cfg.Rotate.Interval != 10*time.Minute {
		t.Errorf("archive only: table %v, rotate.interval %s; want none and 10m", cfg.Table, cfg.Rotate.Interval)
	}
	cfg, err = Parse([]byte(base+"table: {format: iceberg, namespace: n, catalog: {type: sql, uri: 'sqlite:///x.db'}}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Table.FreshnessTarget != DefaultFreshnessTarget {
		t.Errorf("a table without freshness settings: freshness_target %s, want %s", cfg.Table.FreshnessTarget, DefaultFreshnessTarget)
	}
}

// TestDefaultCadenceMaintenance: the default freshness target comes with
// table.maintenance on at its defaults, unless the section says otherwise;
// a cadence the user chose keeps maintenance off unless asked for; the
// rendered config reads back the same.
func TestDefaultCadenceMaintenance(t *testing.T) {
	const tbl = "table: {format: iceberg, namespace: n, catalog: {type: sql, uri: 'sqlite:///x.db'}%s}\n"
	def := DefaultMaintenance()
	for _, c := range []struct {
		name, extra, rotate string
		want                *Maintenance
	}{
		{name: "default cadence", want: &def},
		{name: "default cadence, maintenance off", extra: ", maintenance: {enabled: false}"},
		{name: "default cadence, maintenance null", extra: ", maintenance: null", want: &def},
		{name: "default cadence, maintenance given", extra: ", maintenance: {small_files_above: 5}", want: func() *Maintenance { m := def; m.SmallFilesAbove = 5; return &m }()},
		{name: "commit_interval given", extra: ", commit_interval: 30s"},
		{name: "freshness_target given", extra: ", freshness_target: 8s"},
		{name: "rotate.interval given", rotate: "rotate: {interval: 10m}\n"},
		{name: "commit_interval given, maintenance on", extra: ", commit_interval: 30s, maintenance: {enabled: true}", want: &def},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := Parse([]byte(base+c.rotate+strings.Replace(tbl, "%s", c.extra, 1)), nil)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(cfg.Table.Maintenance, c.want) {
				t.Errorf("Maintenance = %+v, want %+v", cfg.Table.Maintenance, c.want)
			}
			again, err := Parse([]byte(cfg.Redacted()), nil)
			if err != nil {
				t.Fatalf("the rendered config: %v\n%s", err, cfg.Redacted())
			}
			if !reflect.DeepEqual(again.Table.Maintenance, c.want) {
				t.Errorf("rendered and read again, Maintenance = %+v:\n%s", again.Table.Maintenance, cfg.Redacted())
			}
		})
	}
}
