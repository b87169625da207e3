package writer

import (
	"sync"

	"github.com/pqsink/pqsink/meta"
)

// Scratch is the working memory of encoding column chunks: dictionary
// indexes, levels and values, the page being compressed and the one a
// trial compares it with, and the dictionary being built. A chunk borrows
// a set while it is encoded and gives it back, so the memory grows with
// the chunks encoded at once, not with the columns of the writers alive:
// a sink with a row group of 20 MiB in each of its open files held 27 MiB
// of such buffers per file, one set per column, kept between row groups.
//
// A writer has a Scratch of its own unless SharedScratch gives it a shared
// one. A Scratch is safe for concurrent use.
type Scratch struct {
	mu   sync.Mutex
	free []*chunkScratch
	held int64 // by the free sets
}

// SharedScratch makes the writer borrow its working memory from s, shared
// with the other writers given the same one; the writer's Held then leaves
// it out, and the owner of s counts s.Held. Defaults to a Scratch of the
// writer's own.
func SharedScratch(s *Scratch) Option {
	return func(cfg *config) error {
		cfg.scratch = s
		return nil
	}
}

// NewScratch returns an empty Scratch.
func NewScratch() *Scratch { return &Scratch{} }

// Held is the memory the sets not in use keep, by capacity.
func (s *Scratch) Held() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.held
}

// get takes a set, the one given back last (the warmest), or a new one.
func (s *Scratch) get() *chunkScratch {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(s.free)
	if n == 0 {
		return &chunkScratch{}
	}
	cs := s.free[n-1]
	s.free[n-1] = nil
	s.free = s.free[:n-1]
	s.held -= cs.size
	return cs
}

// put gives a set back. Buffers that a chunk of huge values grew past
// keep bytes go: pooled writers must not each keep hundreds of megabytes
// after one huge record, and within keep an ordinary chunk allocates
// nothing.
func (s *Scratch) put(cs *chunkScratch, keep int) {
	cs.trim(keep)
	cs.size = cs.held()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.free = append(s.free, cs)
	s.held += cs.size
}

// chunkScratch is one set of a Scratch.
type chunkScratch struct {
	idx    []int32
	levels []byte
	values []byte
	header []byte

	// ranks orders a byte-array dictionary's entries, so that the bounds
	// of a dictionary-encoded page come from comparing integers; nil when
	// there is no such dictionary.
	ranks     []int32
	rankOrder []int32

	// dictPage is the dictionary page as a trial compressed it.
	dictPage []byte

	// page is the data page being written, encoded and compressed; alt is
	// where a trial encodes the next option before it is compared.
	page, alt encodedPage

	// dicts are the dictionaries of the column types this set has
	// encoded, kept for their tables; every chunk resets the one it uses.
	dicts map[dictKey]dictionary

	size int64 // held, as counted when the set was put back
}

// dictKey is what a dictionary is built for.
type dictKey struct {
	physical meta.Type
	width    int
}

// dictionary returns the set's dictionary for values of the type.
func (cs *chunkScratch) dictionary(physical meta.Type, width int) dictionary {
	k := dictKey{physical, width}
	d := cs.dicts[k]
	if d == nil {
		if cs.dicts == nil {
			cs.dicts = map[dictKey]dictionary{}
		}
		d = newDictionary(physical, width)
		cs.dicts[k] = d
	}
	return d
}

func (cs *chunkScratch) trim(keep int) {
	for _, b := range []*[]byte{&cs.values, &cs.levels, &cs.header, &cs.dictPage, &cs.page.data, &cs.alt.data} {
		if cap(*b) > keep {
			*b = nil
		}
	}
	if 4*cap(cs.idx) > keep {
		cs.idx = nil
	}
	for k, d := range cs.dicts {
		if d.held() > int64(keep) {
			delete(cs.dicts, k) // rebuilt by every chunk anyway
		}
	}
}

func (cs *chunkScratch) held() int64 {
	n := 4*int64(cap(cs.idx)+cap(cs.ranks)+cap(cs.rankOrder)) +
		int64(cap(cs.levels)+cap(cs.values)+cap(cs.header)+cap(cs.dictPage)+cap(cs.page.data)+cap(cs.alt.data))
	for _, d := range cs.dicts {
		n += d.held()
	}
	return n
}
