package table

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	itable "github.com/apache/iceberg-go/table"

	"github.com/pqsink/pqsink/rowgroup"
	"github.com/pqsink/pqsink/schema"
	"github.com/pqsink/pqsink/writer"
)

// positionDeleteSchema is the schema of a position delete file: the
// columns and field ids the Iceberg specification reserves.
const positionDeleteSchema = `message position_delete {
  required binary file_path (STRING) = 2147483546;
  required int64 pos = 2147483545;
}`

// writePositionDeletes writes, at loc, a position delete file of the rows
// of targets (data files of one partition), sorted by file and position
// as the specification asks, and returns its manifest entry: the
// partition of the data files, bounds of file_path and pos, and the data
// file it references when it has one (which iceberg-go's version 2
// manifests leave out: there the equal bounds of file_path name it).
func writePositionDeletes(ctx context.Context, wfs icebergio.WriteFileIO, md itable.Metadata, loc string, targets []*deleteTarget) (iceberg.DataFile, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	sch, err := schema.Parse(positionDeleteSchema)
	if err != nil {
		return nil, err
	}
	targets = slices.Clone(targets)
	slices.SortFunc(targets, func(a, b *deleteTarget) int { return strings.Compare(a.df.FilePath(), b.df.FilePath()) })
	g := rowgroup.New(sch)
	paths, poss := g.Column(0), g.Column(1)
	var rows int64
	minPos, maxPos := int64(1<<63-1), int64(-1)
	for _, t := range targets {
		for _, pos := range t.rows {
			paths.AppendBytes(0, []byte(t.df.FilePath()))
			poss.AppendInt64(0, pos)
			g.EndRow()
			rows++
			minPos, maxPos = min(minPos, pos), max(maxPos, pos)
		}
	}
	var out bytes.Buffer
	w, err := writer.New(&out, sch)
	if err != nil {
		return nil, err
	}
	if err := w.WriteRowGroup(g); err != nil {
		return nil, fmt.Errorf("position delete file %s: %w", loc, err)
	}
	if _, err := w.Close(); err != nil {
		return nil, fmt.Errorf("position delete file %s: %w", loc, err)
	}
	first := targets[0].df
	spec := md.PartitionSpecByID(int(first.SpecID()))
	if spec == nil {
		return nil, fmt.Errorf("position delete file %s: the table has no partition spec %d", loc, first.SpecID())
	}
	b, err := iceberg.NewDataFileBuilder(*spec, iceberg.EntryContentPosDeletes, loc, iceberg.ParquetFile,
		first.Partition(), nil, nil, rows, int64(out.Len()))
	if err != nil {
		return nil, err
	}
	lowPath, highPath := targets[0].df.FilePath(), targets[len(targets)-1].df.FilePath()
	b.LowerBoundValues(map[int][]byte{
		posDeleteFilePathID: []byte(lowPath),
		posDeletePosID:      binary.LittleEndian.AppendUint64(nil, uint64(minPos)),
	}).UpperBoundValues(map[int][]byte{
		posDeleteFilePathID: []byte(highPath),
		posDeletePosID:      binary.LittleEndian.AppendUint64(nil, uint64(maxPos)),
	}).ValueCounts(map[int]int64{posDeleteFilePathID: rows, posDeletePosID: rows}).
		NullValueCounts(map[int]int64{posDeleteFilePathID: 0, posDeletePosID: 0})
	if len(targets) == 1 {
		b.ReferencedDataFile(lowPath)
	}
	if err := wfs.WriteFile(loc, out.Bytes()); err != nil {
		return nil, fmt.Errorf("writing the position delete file %s: %w", loc, err)
	}
	return b.Build(), nil
}
