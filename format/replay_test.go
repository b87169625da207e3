package format

import (
	"context"
	"testing"

	"github.com/pqsink/pqsink/config"
	"github.com/pqsink/pqsink/meta"
)

// namedReplayer is a Replayer that claims the files with its key.
type namedReplayer struct{ key string }

func (n namedReplayer) Label() string { return n.key }

func (n namedReplayer) Claims(kv []meta.KeyValue) string {
	for _, e := range kv {
		if e.Key == n.key {
			return e.Key
		}
	}
	return ""
}

func (n namedReplayer) Encoder(context.Context, ReplayFile) (RecordEncoder, error) { return nil, nil }

// TestRegisterReplayer: the replayers open in the order of their
// registration, each with the replay's config, and a name registered twice
// panics.
func TestRegisterReplayer(t *testing.T) {
	r := NewRegistry()
	var opened []*config.Config
	driver := func(key string) ReplayDriver {
		return func(cfg *config.Config, env ReplayEnv) Replayer {
			if env.Log == nil {
				t.Errorf("%s opened without a logger", key)
			}
			opened = append(opened, cfg)
			return namedReplayer{key}
		}
	}
	r.RegisterReplayer("b", driver("kb"))
	r.RegisterReplayer("a", driver("ka"))
	cfg := &config.Config{}
	rps := r.Replayers(cfg, ReplayEnv{})
	if len(rps) != 2 || rps[0].Label() != "kb" || rps[1].Label() != "ka" {
		t.Fatalf("replayers %v, want kb then ka", rps)
	}
	if len(opened) != 2 || opened[0] != cfg || opened[1] != cfg {
		t.Errorf("opened with %v, want the replay's config twice", opened)
	}
	for _, name := range []string{"a", "b"} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("RegisterReplayer of %s twice did not panic", name)
				}
			}()
			r.RegisterReplayer(name, driver("again"))
		}()
	}
}
