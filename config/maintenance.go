package config

import (
	"math"
	"regexp"
	"strconv"
	"time"
)

// Maintenance is the table.maintenance section: the upkeep of the tables
// that one member of the group does inside the daemon (compaction,
// manifest rewrite, snapshot expiry, orphan removal). When the section is
// absent it is on with every key at its default if the table takes the
// default freshness target, and off otherwise; once it is present, every
// key has a default, and enabled: false turns it off.
type Maintenance struct {
	// CompactEvery is how often a table is maintained: compacted, then its
	// manifests rewritten, then its old snapshots expired, then its
	// orphans removed (compact_every).
	// Defaults to 1h.
	CompactEvery time.Duration
	// SmallFilesAbove is how many small data files (under three quarters
	// of TargetFileSize) a folder of a table (a partition tuple) may
	// hold before they are compacted, between the runs of CompactEvery:
	// checked every few seconds, it keeps a table committed to every few
	// seconds from piling up files (small_files_above); 0 leaves them to
	// the runs of CompactEvery.
	// Defaults to 20.
	SmallFilesAbove int
	// TargetFileSize is the size compaction aims its files at; files of
	// three quarters of it or more are left alone (target_file_size).
	// Defaults to 256MiB.
	TargetFileSize int64
	// RewriteManifestsAbove is how many manifests the current snapshot
	// may list before they are merged (rewrite_manifests_above); 0 never
	// rewrites them.
	// Defaults to 100.
	RewriteManifestsAbove int
	// ExpireSnapshotsOlderThan expires the snapshots older than this,
	// beyond the last KeepSnapshots (expire_snapshots_older_than).
	// Defaults to 7d.
	ExpireSnapshotsOlderThan time.Duration
	// KeepSnapshots is how many of the newest snapshots are kept whatever
	// their age (keep_snapshots).
	// Defaults to 100.
	KeepSnapshots int
	// MaxSnapshots bounds the snapshots a table keeps, whatever their age:
	// when more would stay, expiry keeps the newest MaxSnapshots (at least
	// KeepSnapshots), so that a table committed to every second does not
	// pile up a week of them before ExpireSnapshotsOlderThan takes any
	// (max_snapshots). It is checked with SmallFilesAbove's checks, and at
	// each run of CompactEvery. 0 sets no bound.
	// Defaults to 1000, or KeepSnapshots when that is more.
	MaxSnapshots int
	// RemoveOrphansOlderThan is the age past which a file under the
	// table's location that no snapshot references is deleted
	// (remove_orphans_older_than). It must be safely larger than the
	// longest time between a file's upload and its commit: at least
	// MinOrphanAge.
	// Defaults to 3d.
	RemoveOrphansOlderThan time.Duration
}

// The keys of table.maintenance.
var maintenanceKeys = []string{"enabled", "compact_every", "small_files_above", "target_file_size", "rewrite_manifests_above", "expire_snapshots_older_than", "keep_snapshots", "max_snapshots", "remove_orphans_older_than"}

// DefaultMaintenance is table.maintenance with every key at its default.
func DefaultMaintenance() Maintenance {
	return Maintenance{
		CompactEvery:             time.Hour,
		SmallFilesAbove:          20,
		TargetFileSize:           256 * mib,
		RewriteManifestsAbove:    100,
		ExpireSnapshotsOlderThan: 7 * day,
		KeepSnapshots:            100,
		MaxSnapshots:             1000,
		RemoveOrphansOlderThan:   3 * day,
	}
}

const day = 24 * time.Hour

// MinOrphanAge is the smallest remove_orphans_older_than that is safe with
// these settings: twice the longest time between a file's upload and its
// table commit, and a minute for the commit's own retries. A file is
// committed at the latest table.commit_interval after its upload; and a
// member that crashed between the two uploads the same file again
// (meeting the object, which it adopts) up to rotate.interval (or
// rotate.schedule) after it resumes, then commits it. With neither
// rotate.interval nor rotate.schedule, a file stays open as long as its
// records take, and the age must be at least a day.
func MinOrphanAge(commitInterval time.Duration, r Rotate) time.Duration {
	span := max(r.Interval, r.Schedule)
	if span <= 0 {
		return max(day, 2*commitInterval+time.Minute)
	}
	return 2*(commitInterval+span) + time.Minute
}

// maintenance reads table.maintenance; t's commit_interval and c's rotate
// section are read already.
func (d *decoder) maintenance(s *section, c *Config, t *Table) *Maintenance {
	m := DefaultMaintenance()
	s.duration("compact_every", &m.CompactEvery, time.Second, maxInt)
	s.intValue("small_files_above", &m.SmallFilesAbove, 0, math.MaxInt32)
	s.size("target_file_size", &m.TargetFileSize, mib, maxInt)
	s.intValue("rewrite_manifests_above", &m.RewriteManifestsAbove, 0, math.MaxInt32)
	s.age("expire_snapshots_older_than", &m.ExpireSnapshotsOlderThan, 0, maxInt)
	s.intValue("keep_snapshots", &m.KeepSnapshots, 1, math.MaxInt32)
	if s.intValue("max_snapshots", &m.MaxSnapshots, 0, math.MaxInt32) {
		if m.MaxSnapshots > 0 && m.MaxSnapshots < m.KeepSnapshots && !s.bad["keep_snapshots"] {
			s.fail("max_snapshots", "%d is less than keep_snapshots (%d): want at least as many, or 0 for no bound", m.MaxSnapshots, m.KeepSnapshots)
		}
	} else if !s.bad["max_snapshots"] {
		m.MaxSnapshots = max(m.MaxSnapshots, m.KeepSnapshots)
	}
	s.age("remove_orphans_older_than", &m.RemoveOrphansOlderThan, time.Second, maxInt)
	if !s.bad["remove_orphans_older_than"] {
		if lo := MinOrphanAge(t.CommitInterval, c.Rotate); m.RemoveOrphansOlderThan < lo {
			s.fail("remove_orphans_older_than", "%s is too short: a file may be committed up to table.commit_interval (%s) after its upload, and uploaded again up to rotate.interval (%s) after a restart; want at least %s (twice their sum and a minute, or a day without rotate.interval and rotate.schedule)",
				formatAge(m.RemoveOrphansOlderThan), formatDuration(t.CommitInterval), formatDuration(max(c.Rotate.Interval, c.Rotate.Schedule)), formatAge(lo))
		}
	}
	enabled := true
	if s.boolean("enabled", &enabled) && !enabled {
		return nil
	}
	return &m
}

var daysPrefix = regexp.MustCompile(`^([0-9]+)d(.*)$`)

// ParseAge reads a duration as time.ParseDuration does, also taking a
// leading number of days: "7d", "3d12h", "36h", "90m".
func ParseAge(s string) (time.Duration, error) {
	m := daysPrefix.FindStringSubmatch(s)
	if m == nil {
		return time.ParseDuration(s)
	}
	n, err := strconv.ParseInt(m[1], 10, 64)
	if err != nil || n > int64(math.MaxInt64/day) {
		return 0, strconv.ErrRange
	}
	v := time.Duration(n) * day
	if m[2] != "" {
		rest, err := time.ParseDuration(m[2])
		if err != nil || rest < 0 {
			return 0, strconv.ErrSyntax
		}
		v += rest
	}
	return v, nil
}

// formatAge writes an age in days when it is whole days, as
// formatDuration otherwise.
func formatAge(d time.Duration) string {
	if d > 0 && d%day == 0 {
		return strconv.FormatInt(int64(d/day), 10) + "d"
	}
	return formatDuration(d)
}

// age reads a duration that may be given in days ("7d", "3d12h") in
// [lo, hi].
func (s *section) age(name string, dst *time.Duration, lo, hi time.Duration) bool {
	t, ok := s.text(name, "a duration")
	if !ok {
		return false
	}
	v, err := ParseAge(t)
	if err != nil {
		s.fail(name, "want a duration like 7d, 36h or 90m, got %s", s.got(name, t))
		return false
	}
	if !s.inRange(name, int64(v), int64(lo), int64(hi), func(n int64, _ int) string { return formatAge(time.Duration(n)) }) {
		return false
	}
	*dst, s.set[name] = v, true
	return true
}

// node renders the section for Redacted.
func (m *Maintenance) node() *node {
	age := func(d time.Duration) *node { return yScalar("!!str", formatAge(d)) }
	return yMap(
		"compact_every", yDuration(m.CompactEvery),
		"small_files_above", yInt(int64(m.SmallFilesAbove)),
		"target_file_size", ySize(m.TargetFileSize),
		"rewrite_manifests_above", yInt(int64(m.RewriteManifestsAbove)),
		"expire_snapshots_older_than", age(m.ExpireSnapshotsOlderThan),
		"keep_snapshots", yInt(int64(m.KeepSnapshots)),
		"max_snapshots", yInt(int64(m.MaxSnapshots)),
		"remove_orphans_older_than", age(m.RemoveOrphansOlderThan),
	)
}
