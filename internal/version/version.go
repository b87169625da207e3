// Package version reports pqsink's version and build, as written into
// every file's created_by and the `pqsink version` command.
package version

import "runtime/debug"

// Version is the release version, set at link time with
// -ldflags "-X github.com/pqsink/pqsink/internal/version.Version=v1.2.3".
var Version = "0.1.0-dev"

// Build returns the VCS revision the binary was built from (12 hex digits,
// "+dirty" when the tree had changes), or "unknown".
func Build() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	rev, dirty := "", false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return "unknown"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if dirty {
		rev += "+dirty"
	}
	return rev
}

// CreatedBy is the created_by string of the files pqsink writes, in the
// "<application> version <semver> (build <hash>)" form readers parse.
func CreatedBy() string {
	return "pqsink version " + Version + " (build " + Build() + ")"
}
