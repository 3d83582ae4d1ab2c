package main

import (
	"strings"
	"testing"
)

// TestTradeoffBadInput: the regions sweep and the durability matrix refuse bad input before
// they start a cluster, exit 1 and name the flag or field and the fix.
func TestTradeoffBadInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"regions", "--periods", "1"}, []string{"--periods", `"1" has no unit`, "250ms"}},
		{[]string{"regions", "--periods", "1s", "--duration", "500ms"}, []string{"--duration 500ms: must be at least 1s"}},
		{[]string{"regions", "smoke"}, []string{"scenario smoke: regions: absent", "regions-global"}},
		{[]string{"durability", "--faults", "crash"}, []string{`--faults: "crash" is not one of kill-primary, partition`}},
		{[]string{"durability", "--settings", "async,fsync"}, []string{`--settings: "fsync" is not one of async, wait, wait-pipeline, min-replicas`}},
		{[]string{"durability", "smoke"}, []string{"scenario smoke: faults: no partition of a primary", "partition built-in"}},
	} {
		code, stdout, stderr := execRatelab(t, dir, c.args...)
		for _, w := range c.want {
			if code != 1 || !strings.Contains(stderr, w) {
				t.Errorf("%v: exit %d, stderr %q; want 1 and %q", c.args, code, stderr, w)
			}
		}
		if strings.Contains(stderr, "starting a local") || stdout != "" {
			t.Errorf("%v: started something or printed a result:\n%s%s", c.args, stdout, stderr)
		}
	}
}
