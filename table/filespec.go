package table

import (
	"fmt"
	"strings"

	"github.com/apache/iceberg-go"
	itable "github.com/apache/iceberg-go/table"
)

// A table's partition spec may change while files written by the one
// before are on their way to it (another engine's ALTER TABLE ... ADD
// PARTITION FIELD). A snapshot may add data files of any of the table's
// specs, each in a manifest of its own spec, so a file is committed with
// the spec its path follows: the one the sink wrote it by (File.SpecID),
// or else the one its folders name.

// fileSpec is the partition spec of tbl that f's path follows: f.SpecID
// when set; else the default spec when the file's folders under data/
// are its fields, one each in order, or a file is elsewhere; else the
// newest spec whose fields they are; else the default spec, whose tuple
// the file's column bounds then give (partitionValues).
func fileSpec(tbl *itable.Table, f File) (iceberg.PartitionSpec, error) {
	if f.SpecID != nil {
		s, err := specOf(tbl, *f.SpecID)
		if err != nil {
			return iceberg.PartitionSpec{}, fmt.Errorf("the file's spec: %w", err)
		}
		return s, nil
	}
	def := tbl.Spec()
	folders, ok := pathFolders(tbl, f.Location)
	if !ok || foldersOf(def, folders) {
		return def, nil
	}
	var best *iceberg.PartitionSpec
	for _, s := range tbl.Metadata().PartitionSpecs() {
		if foldersOf(s, folders) && (best == nil || s.ID() > best.ID()) {
			best = &s
		}
	}
	if best == nil {
		return def, nil
	}
	return *best, nil
}

// foldersOf reports whether folders are one Name=value folder per field
// of spec, in its order, as the sink names them.
func foldersOf(spec iceberg.PartitionSpec, folders []string) bool {
	if spec.NumFields() != len(folders) {
		return false
	}
	for i, f := range spec.Fields() {
		if !strings.HasPrefix(folders[i], f.Name+"=") {
			return false
		}
	}
	return true
}
