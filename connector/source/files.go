package source

import (
	"context"
	"iter"

	"github.com/pqsink/pqsink/objstore"
)

// objects are the objects the plan considers: Options.Files when set (a
// table's snapshot names its files; nothing else under the store is
// read), otherwise every object listed in the store.
func (r *Replayer) objects(ctx context.Context) iter.Seq2[objstore.Info, error] {
	if r.opts.Files == nil {
		return r.store.List(ctx, "")
	}
	return func(yield func(objstore.Info, error) bool) {
		for _, f := range r.opts.Files {
			if !yield(objstore.Info{Key: f.Key, Size: f.Size}, nil) {
				return
			}
		}
	}
}
