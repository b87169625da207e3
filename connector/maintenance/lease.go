package maintenance

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/pqsink/pqsink/objstore"
)

// lease is the right to maintain one table, proved by the store.
//
// A lease is a sequence of objects {prefix}{epoch}.json, each created
// create-if-absent and never changed: the one of the highest epoch is in
// force, naming its holder and when it expires. The holder renews it by
// creating the next epoch; a member that finds the lease in force expired
// (or given up) takes it over the same way. Two members that both find
// epoch N expired both create N+1, and the store lets exactly one of them
// do so (the other gets ErrExists and goes on without the lease).
//
// Taking over by deleting the expired object and creating it again under
// the same key would race: member A deletes it and creates its own; member
// B, who read the same expired lease a moment before, deletes A's fresh
// one and creates its own, and both believe they hold the lease. With a
// new key for every epoch no lease in force is ever deleted: only epochs
// below the one in force are, by the holder, after it created its own, so
// the highest epoch never goes back.
type lease struct {
	store  objstore.Store
	prefix string
	holder string

	held  bool
	epoch int64    // the epoch in force as last seen (this member's when held)
	doc   leaseDoc // its content
}

// leaseDoc is the content of a lease object.
type leaseDoc struct {
	Holder  string    `json:"holder"`
	Expires time.Time `json:"expires"`
	// Last is when the table's last maintenance run started, so that a
	// member taking the lease over knows when the next one is due.
	Last time.Time `json:"last_run"`
}

func (l *lease) key(epoch int64) string {
	return fmt.Sprintf("%s%020d.json", l.prefix, epoch)
}

// acquire reports whether this member holds the lease after renewing it
// (when less than two thirds of leaseTTL are left) or taking it over (when
// the one in force has expired).
func (l *lease) acquire(ctx context.Context, now time.Time) (bool, error) {
	epoch, doc, err := l.current(ctx)
	if err != nil {
		// The store did not answer: a lease held stays held until it
		// expires.
		l.held = l.held && now.Before(l.doc.Expires)
		return l.held, err
	}
	mine := l.held && epoch == l.epoch && doc.Holder == l.holder
	l.epoch, l.doc, l.held = epoch, doc, false
	switch {
	case mine && doc.Expires.Sub(now) > 2*leaseTTL/3:
		l.held = true
		return true, nil
	case !mine && epoch != 0 && now.Before(doc.Expires):
		return false, nil // another member's
	}
	// Ours to renew, expired, given up, or none yet.
	return l.renew(ctx, now)
}

// renew creates the next epoch of the lease for this member, carrying its
// run time; it reports whether that worked (false: another member created
// that epoch first).
func (l *lease) renew(ctx context.Context, now time.Time) (bool, error) {
	doc := leaseDoc{Holder: l.holder, Expires: now.Add(leaseTTL), Last: l.doc.Last}
	next := l.epoch + 1
	if err := l.create(ctx, next, doc); err != nil {
		l.held = false
		if errors.Is(err, objstore.ErrExists) {
			return false, nil
		}
		return false, err
	}
	l.epoch, l.doc, l.held = next, doc, true
	// The epochs below the one before are no use to anyone.
	for info, err := range l.store.List(ctx, l.prefix) {
		if err != nil {
			break
		}
		if e, ok := l.epochOf(info.Key); ok && e < next-1 {
			l.store.Delete(ctx, info.Key)
		}
	}
	return true, nil
}

// release creates the next epoch, already expired, so that any member may
// take the lease over.
func (l *lease) release(ctx context.Context, now time.Time) error {
	l.held = false
	err := l.create(ctx, l.epoch+1, leaseDoc{Holder: l.holder, Expires: now, Last: l.doc.Last})
	if errors.Is(err, objstore.ErrExists) {
		return nil // taken over already
	}
	return err
}

func (l *lease) create(ctx context.Context, epoch int64, doc leaseDoc) error {
	body, err := json.Marshal(doc)
	if err != nil {
		return err
	}
	if _, err := objstore.Put(ctx, l.store, l.key(epoch), bytes.NewReader(body), objstore.ContentType("application/json")); err != nil {
		return fmt.Errorf("creating the lease %s: %w", l.key(epoch), err)
	}
	return nil
}

// current reads the lease in force: its epoch (0 when there is none) and
// content.
func (l *lease) current(ctx context.Context) (int64, leaseDoc, error) {
	var newest int64
	var key string
	for info, err := range l.store.List(ctx, l.prefix) {
		if err != nil {
			return 0, leaseDoc{}, fmt.Errorf("listing the lease %s: %w", l.prefix, err)
		}
		if e, ok := l.epochOf(info.Key); ok && e > newest {
			newest, key = e, info.Key
		}
	}
	if newest == 0 {
		return 0, leaseDoc{}, nil
	}
	r, _, err := l.store.Get(ctx, key)
	if err != nil {
		return 0, leaseDoc{}, fmt.Errorf("reading the lease %s: %w", key, err)
	}
	defer r.Close()
	body, err := io.ReadAll(io.LimitReader(r, 1<<16))
	if err != nil {
		return 0, leaseDoc{}, fmt.Errorf("reading the lease %s: %w", key, err)
	}
	var doc leaseDoc
	if err := json.Unmarshal(body, &doc); err != nil {
		// Not one of ours: treat it as expired, and take over from it.
		return newest, leaseDoc{}, nil
	}
	return newest, doc, nil
}

// epochOf is the epoch of a lease object's key.
func (l *lease) epochOf(key string) (int64, bool) {
	name, ok := strings.CutPrefix(key, l.prefix)
	if !ok {
		return 0, false
	}
	name, ok = strings.CutSuffix(name, ".json")
	if !ok || strings.Contains(name, "/") {
		return 0, false
	}
	e, err := strconv.ParseInt(name, 10, 64)
	return e, err == nil && e > 0
}
