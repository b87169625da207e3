package sinkbench

import (
	"slices"
	"strings"
	"testing"

	"github.com/pqsink/pqsink/config"
)

// TestWorkloads: each workload is a format.type the config takes, listed
// once in workloadNames, and an unknown format is refused with their
// names.
func TestWorkloads(t *testing.T) {
	if len(workloads) != len(workloadNames) {
		t.Errorf("%d workloads, %d names", len(workloads), len(workloadNames))
	}
	for _, name := range workloadNames {
		if _, ok := workloads[name]; !ok {
			t.Errorf("workloadNames has %s, without a workload", name)
		}
		if !slices.Contains(config.FormatTypes(), name) {
			t.Errorf("workload %s is not a format.type", name)
		}
		if q := DemoQuery(name, "/m.json"); !strings.Contains(q, "iceberg_scan('/m.json')") {
			t.Errorf("DemoQuery(%s) = %q", name, q)
		}
	}
	o := Options{Format: "avro"}
	if err := o.defaults(); err == nil || err.Error() != `format "avro": want json, variant or protobuf` {
		t.Errorf("defaults of format avro: %v", err)
	}
}

func TestChildEnvDropsProfiles(t *testing.T) {
	in := []string{"HOME=/h", "PQSINK_CPUPROFILE=/tmp/cpu", "PQSINK_MEMPROFILE=/tmp/mem", "PQSINK_CPUPROFILEX=keep"}
	got := childEnv(in)
	want := []string{"HOME=/h", "PQSINK_CPUPROFILEX=keep"}
	if !slices.Equal(got, want) {
		t.Errorf("childEnv = %q, want %q", got, want)
	}
	if len(in) != 4 {
		t.Errorf("childEnv changed its input: %q", in)
	}
}
