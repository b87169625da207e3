package compact

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/pqsink/pqsink/archive"
	"github.com/pqsink/pqsink/archive/envelope"
	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/objstore"
	"github.com/pqsink/pqsink/schema"
	"github.com/pqsink/pqsink/table"
)

// Millisecond timestamps. Before schema.WidenMillis, the sink wrote Avro
// timestamp-millis and local-timestamp-millis, the _kafka.timestamp
// envelope column and a JSON schema file's TIMESTAMP(MILLIS) columns into
// a table's files as INT64 TIMESTAMP(MILLIS). Iceberg's timestamps are
// microseconds, and engines misread such columns (iceberg-go's filters
// keep none of their rows). Compaction converts them: every file with
// such a column is planned whatever its size, its bin is that of its
// folder's microsecond files of the same columns otherwise (the plan
// compares schemas with their millisecond timestamps in microseconds),
// and the merge writes the column in microseconds (merge.WidenMillis).
// The manifests' bounds of those files were converted when the sink
// committed them (table's metrics), and the new file gets its own.

// millisColumns returns the paths of the INT64 TIMESTAMP(MILLIS) leaves of
// s, nil when it has none.
func millisColumns(s *schema.Schema) []string {
	var out []string
	for _, l := range s.Leaves() {
		if l.Physical == meta.TypeInt64 && l.Logical.Kind == schema.Timestamp && l.Logical.Unit == schema.Millis {
			out = append(out, l.PathString())
		}
	}
	return out
}

// widened is s with its millisecond timestamps in microseconds, as the
// merge writes it (s when it has none, or should it not widen).
func widened(s *schema.Schema) *schema.Schema {
	w, _, err := schema.WidenMillis(s)
	if err != nil {
		return s
	}
	return w
}

// millisFiles reads the footers of the live files added before the
// cutoff that Plan takes by their size (it reads them anyway), or of all
// of them with o.ConvertMillis (a read per file: a large table's
// daemon must not pay it every run), and returns the locations of those
// with a millisecond timestamp column: Plan takes them whatever their
// size, and a bin that holds one whatever its number of files. Footers
// it reads go into footers.
func millisFiles(ctx context.Context, store objstore.Store, keyOf func(string) (string, error), live []table.LiveFile, o Options, footers map[string]footer) (map[string]bool, error) {
	cutoff := o.Now().Add(-o.OlderThan)
	small := o.TargetFileSize / 4 * 3
	out := map[string]bool{}
	for _, f := range live {
		if f.Added.After(cutoff) || (f.Size >= small && !o.ConvertMillis) {
			continue
		}
		ft, err := readFooter(ctx, store, keyOf, f.Location)
		if err != nil {
			return nil, err
		}
		footers[f.Location] = ft
		if len(ft.millis) > 0 && (ft.sink || ft.envelope != nil) {
			out[f.Location] = true
		}
	}
	return out, nil
}

// unitsEntry returns the archive.JSONTimestampUnitsKey entry the new file of b
// must carry for replay to render the producer's JSON: the entries of its
// inputs (the newer files', which name the columns they widened), and
// the millisecond columns of its inputs of a JSON schema file, the
// envelope's aside (replay reads its unit from the file). Files of Avro
// (their schema says which columns were widened: avro.MillisInMicros)
// and Protobuf need none; nor a bin without millisecond columns. ok is
// false when the new file needs no entry.
func unitsEntry(b Bin, footers map[string]footer) (value string, ok bool, err error) {
	units := map[string]string{}
	converted := false
	for _, f := range b.Files {
		ft := footers[f.Location]
		if ft.units != "" {
			var m map[string]string
			if err := json.Unmarshal([]byte(ft.units), &m); err != nil {
				return "", false, fmt.Errorf("%s: footer entry %s: %w", f.Location, archive.JSONTimestampUnitsKey, err)
			}
			for k, v := range m {
				units[k] = v
			}
		}
		if ft.ownSchema {
			continue
		}
		for _, p := range ft.millis {
			if !strings.HasPrefix(p, envelope.Field+".") {
				units[p], converted = schema.Millis.String(), true
			}
		}
	}
	if !converted {
		return "", false, nil
	}
	text, err := json.Marshal(units)
	if err != nil {
		return "", false, err
	}
	return string(text), true, nil
}

// converted counts the files of b with millisecond timestamp columns.
func converted(b Bin, footers map[string]footer) int {
	return len(slices.DeleteFunc(slices.Clone(b.Files), func(f table.LiveFile) bool { return len(footers[f.Location].millis) == 0 }))
}
