package main

import (
	"strings"
	"testing"
	"time"

	"ratelab/scenarios"
)

// TestRunDurabilityFlag: --durability sets the limiter's WAIT and the primaries' min-replicas
// together (one setting at a time), --durability-timeout WAIT's timeout, and a value the spec
// refuses is named with its fix.
func TestRunDurabilityFlag(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		args    []string
		name    string
		minRepl int
		timeout time.Duration
		err     string
	}{
		{[]string{"--durability", "wait", "--durability-timeout", "20ms"}, "wait", 0, 20 * time.Millisecond, ""},
		{[]string{"--durability", "min-replicas"}, "min-replicas", 1, 0, ""},
		{[]string{"--durability", "async"}, "async", 0, 0, ""},
		{[]string{"--durability", "wait-pipeline"}, "", 0, 0, "set limiter.transport: coalesce"},
		{[]string{"--durability", "wait-pipeline", "--transport", "coalesce"}, "wait-pipeline", 0, scenarios.DefaultDurabilityTimeout, ""},
		{[]string{"--durability", "sync"}, "", 0, 0, `limiter.durability: "sync"`},
		{[]string{"--audit", "--limiter", "gcra"}, "", 0, 0, "limiter.audit: true: only limiter.kind token-bucket"},
	} {
		cmd, _, err := newRootCmd().Find([]string{"run"})
		if err != nil {
			t.Fatal(err)
		}
		var o runOptions
		cmd.ResetFlags()
		o.addFlags(cmd)
		if err := cmd.ParseFlags(tt.args); err != nil {
			t.Fatal(err)
		}
		spec, err := scenarios.Resolve("partition")
		if err != nil {
			t.Fatal(err)
		}
		err = applyOverrides(cmd, spec, o)
		switch {
		case tt.err != "":
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%v: %v, want an error containing %q", tt.args, err, tt.err)
			}
		case err != nil:
			t.Errorf("%v: %v", tt.args, err)
		case spec.DurabilityName() != tt.name || spec.Cluster.MinReplicasToWrite != tt.minRepl || time.Duration(spec.Limiter.DurabilityTimeout) != tt.timeout:
			t.Errorf("%v: durability %s, min-replicas %d, WAIT timeout %s; want %s, %d, %s", tt.args,
				spec.DurabilityName(), spec.Cluster.MinReplicasToWrite, time.Duration(spec.Limiter.DurabilityTimeout), tt.name, tt.minRepl, tt.timeout)
		}
	}
}
