package health

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/pqsink/pqsink/objstore"
)

// The checks of `pqsink run --check`: read-only, each within a timeout,
// naming the configuration key of what fails.

// CheckTopics judges the brokers' answer to a metadata request for want
// (each topic's error by name, found): a configured topic (among
// configured) that does not exist, or that the brokers refuse, is an
// error of kafka.topics; the dead-letter topic (deadLetter) may be
// missing, since its first letter can create it, but not refused.
func CheckTopics(found map[string]error, want, configured []string, deadLetter string) error {
	var errs []error
	for _, t := range want {
		terr, ok := found[t]
		key := "kafka.topics"
		if t == deadLetter && !slices.Contains(configured, t) {
			// The dead-letter topic may be created by its first letter
			// when the brokers allow it.
			if !ok || errors.Is(terr, kafka.UnknownTopicOrPartition) {
				continue
			}
			key = "dead_letter.topic"
		}
		switch {
		case !ok || errors.Is(terr, kafka.UnknownTopicOrPartition):
			errs = append(errs, fmt.Errorf("%s: topic %q does not exist on the brokers", key, t))
		case terr != nil:
			errs = append(errs, fmt.Errorf("%s: topic %q: %w", key, t, terr))
		}
	}
	return errors.Join(errs...)
}

// CheckDestination checks a store URL, opened by open (with the store
// section's settings and credentials): a bucket must answer a listing of
// at most one key within timeout; a file:// folder that does not exist is
// not created, only noted.
func CheckDestination(ctx context.Context, rawURL string, timeout time.Duration, open func(context.Context) (objstore.Store, error)) (note string, err error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "", err
	}
	if u.Scheme == "file" {
		dir := filepath.FromSlash(u.Path)
		fi, err := os.Stat(dir)
		switch {
		case errors.Is(err, os.ErrNotExist):
			return fmt.Sprintf("the folder %s does not exist yet; the sink creates it", dir), nil
		case err != nil:
			return "", err
		case !fi.IsDir():
			return "", fmt.Errorf("%s is not a folder", dir)
		}
		return "", nil
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	st, err := open(cctx)
	if err != nil {
		return "", err
	}
	defer st.Close()
	if err := ListOne(cctx, st); err != nil {
		if cctx.Err() != nil {
			err = fmt.Errorf("no answer within %s: %w", timeout, err)
		}
		return "", err
	}
	return "", nil
}
