package compact

import (
	"context"
	"errors"
	"slices"

	"github.com/pqsink/pqsink/table"
)

// offsetColumn is the envelope leaf of a record's Kafka offset, from which
// the merge tells the offsets around deleted rows.
const offsetColumn = "_kafka.offset"

// readDeletes reads the rows that delete files delete from the inputs of
// rep's bins (as of snapshot, the one planned from), sets each bin's
// Deleted and the report's counts of delete files, and returns them. An
// input whose delete files pqsink does not read (table.ErrDeleteFiles:
// position deletes in Avro or ORC, say) is left out instead, counted in
// WithDeletes, and bins left with too few files are dropped.
func readDeletes(ctx context.Context, h *table.Handle, snapshot int64, rep *Report, min int) (table.PlanDeletes, error) {
	locs := withDeletes(rep.Bins)
	if len(locs) == 0 {
		return table.PlanDeletes{}, nil
	}
	pd, err := h.Deletes(ctx, snapshot, locs)
	if errors.Is(err, table.ErrDeleteFiles) {
		// Which inputs they are: each is read alone, and those that fail
		// so are left out.
		unread := map[string]bool{}
		for _, loc := range locs {
			_, err := h.Deletes(ctx, snapshot, []string{loc})
			switch {
			case errors.Is(err, table.ErrDeleteFiles):
				unread[loc] = true
			case err != nil:
				return pd, err
			}
		}
		var left int
		rep.Bins, left = without(rep.Bins, func(f table.LiveFile) bool { return unread[f.Location] })
		rep.WithDeletes += left
		kept := rep.Bins[:0]
		for _, b := range rep.Bins {
			if b.enough(min) {
				kept = append(kept, b)
			}
		}
		rep.Bins = kept
		pd, err = table.PlanDeletes{}, nil
		if locs := withDeletes(rep.Bins); len(locs) > 0 {
			pd, err = h.Deletes(ctx, snapshot, locs)
		}
	}
	if err != nil {
		return pd, err
	}
	for i := range rep.Bins {
		b := &rep.Bins[i]
		for _, f := range b.Files {
			if p := pd.Rows[f.Location]; p != nil {
				b.Deleted += p.Len()
			}
		}
	}
	rep.DeleteFilesApplied, rep.DeleteFilesRemoved = len(pd.Applied), len(pd.Removable)
	return pd, nil
}

// withDeletes returns the locations of the files of bins that delete
// files may apply to.
func withDeletes(bins []Bin) []string {
	var locs []string
	for _, b := range bins {
		for _, f := range b.Files {
			if f.Deletes > 0 {
				locs = append(locs, f.Location)
			}
		}
	}
	return locs
}

// without returns bins without the files drop says to leave out, and how
// many it left out; a bin left with no file is dropped.
func without(bins []Bin, drop func(table.LiveFile) bool) ([]Bin, int) {
	var out []Bin
	left := 0
	for _, b := range bins {
		kept := Bin{Folder: b.Folder}
		for _, f := range b.Files {
			if drop(f) {
				left++
				continue
			}
			kept.Files = append(kept.Files, f)
			kept.Bytes += f.Size
			kept.Records += f.Records
			if slices.Contains(b.millis, f.Location) {
				kept.millis = append(kept.millis, f.Location)
			}
		}
		if len(kept.Files) > 0 {
			out = append(out, kept)
		}
	}
	return out, left
}
