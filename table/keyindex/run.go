package keyindex

import (
	"bytes"
	"errors"
	"fmt"
	"hash/maphash"
	"os"
	"sort"
)

// run is a sorted run spilled to the local directory: the file, its
// footer's sparse index (each block's first key) and a bloom filter over
// its keys, both in memory.
type run struct {
	path  string
	f     *os.File
	fr    *fileReader
	bloom bloom
	mem   int64 // the bytes its in-memory parts take
}

// get looks a key up in the run; scratch is a reusable block buffer.
func (r *run) get(key []byte, scratch *[]byte) (entry, bool, error) {
	if !r.bloom.has(key) {
		return entry{}, false, nil
	}
	blocks := r.fr.blocks
	i := sort.Search(len(blocks), func(i int) bool { return bytes.Compare(blocks[i].firstKey, key) > 0 }) - 1
	if i < 0 {
		return entry{}, false, nil
	}
	buf, err := r.fr.readBlock(i, *scratch)
	*scratch = buf
	if err != nil {
		return entry{}, false, fmt.Errorf("keyindex: spilled run %s: %w", r.path, err)
	}
	var found entry
	var ok bool
	err = r.fr.blockEntries(i, buf, nil, func(e entry) error {
		switch c := bytes.Compare(e.key, key); {
		case c == 0:
			found, ok = e, true
			return errStop
		case c > 0:
			return errStop
		}
		return nil
	})
	if err != nil && err != errStop {
		return entry{}, false, fmt.Errorf("keyindex: spilled run %s: %w", r.path, err)
	}
	return found, ok, nil
}

func (r *run) close() error {
	err := r.f.Close()
	if rerr := os.Remove(r.path); rerr != nil && err == nil {
		err = rerr
	}
	return err
}

// errStop ends a walk of a block's entries early.
var errStop = errors.New("stop")

// bloom is a bloom filter of 10 bits a key and 7 probes (about 1% false
// positives), so that a key absent from a run costs no read of it.
type bloom struct {
	seed maphash.Seed
	bits []uint64
}

const bloomProbes = 7

func newBloom(seed maphash.Seed, keys uint64) bloom {
	n := (keys*10 + 63) / 64
	if n == 0 {
		n = 1
	}
	return bloom{seed: seed, bits: make([]uint64, n)}
}

func (b bloom) add(key []byte) {
	h := maphash.Bytes(b.seed, key)
	h1, h2 := h, h>>32|1
	m := uint64(len(b.bits)) * 64
	for i := uint64(0); i < bloomProbes; i++ {
		p := (h1 + i*h2) % m
		b.bits[p/64] |= 1 << (p % 64)
	}
}

func (b bloom) has(key []byte) bool {
	h := maphash.Bytes(b.seed, key)
	h1, h2 := h, h>>32|1
	m := uint64(len(b.bits)) * 64
	for i := uint64(0); i < bloomProbes; i++ {
		p := (h1 + i*h2) % m
		if b.bits[p/64]&(1<<(p%64)) == 0 {
			return false
		}
	}
	return true
}
