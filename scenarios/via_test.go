package scenarios

import (
	"strings"
	"testing"
)

// TestViaHTTPAccepts: via: http takes every limiter kind, several gateways, leases with any
// number of gateways and their gateway-kill faults, tariffs and an external cluster.
func TestViaHTTPAccepts(t *testing.T) {
	t.Parallel()
	const base = "name: t\nduration: 2s\nvia: http\nload: {rate: 100}\ntenants: {count: 10}\n"
	const bucket = "policy: {rate: 10, burst: 20}\n"
	const window = "policy: {limit: 20, window: 1s}\n"
	tests := []struct{ name, yaml string }{
		{"token-bucket", bucket + "limiter: {kind: token-bucket}\n"},
		{"gcra", bucket + "limiter: {kind: gcra}\n"},
		{"fixed-window", window + "limiter: {kind: fixed-window}\n"},
		{"sliding-window", window + "limiter: {kind: sliding-window}\n"},
		{"sliding-log", window + "limiter: {kind: sliding-log}\n"},
		{"two-tier", "policy: {rate: 10, burst: 20, quota: {limit: 500, window: 24h}}\nlimiter: {kind: two-tier}\n"},
		{"lease", bucket + "limiter: {kind: lease, lease: {gateways: 4}}\n"},
		{"memory", bucket + "limiter: {kind: memory}\n"},
		{"noop", bucket + "limiter: {kind: noop}\n"},
		{"gateways", bucket + "limiter: {kind: token-bucket, gateways: 3}\n"},
		{"gateway-kill with leases", bucket + "limiter: {kind: lease, lease: {gateways: 2}}\nfaults: [{at: 1s, kind: gateway-kill, target: gateway:1}]\n"},
		{"cluster fault", bucket + "faults: [{at: 1s, kind: pause, for: 500ms}]\n"},
		{"inline tariffs", "policy: {tariffs: {version: 1, plans: {free: {default: {rate: 5, burst: 10}}}, default_plan: free}}\n"},
		{"external cluster", bucket + "cluster: {provider: external, url: 'redis://127.0.0.1:7000'}\n"},
	}
	for _, tt := range tests {
		s, err := Parse("x.yaml", []byte(base+tt.yaml))
		if err != nil {
			t.Errorf("%s: %v, want via: http to accept it", tt.name, err)
			continue
		}
		if s.Via != ViaHTTP {
			t.Errorf("%s: via = %q, want %q", tt.name, s.Via, ViaHTTP)
		}
	}
}

// TestViaHTTPRefuses: what depends on a clock the gateway server does not have is refused, with
// the field and the fix; the same spec via: process is valid.
func TestViaHTTPRefuses(t *testing.T) {
	t.Parallel()
	const spec = `name: t
duration: 2s
load: {rate: 100}
tenants: {count: 10}
policy: {rate: 10, burst: 20}
limiter: {kind: lease, clock: schedule, lease: {gateways: 2}}
faults: [{at: 1s, kind: clock-skew, offset: 1s}, {at: 1s, kind: gateway-kill}]
`
	if _, err := Parse("x.yaml", []byte(spec)); err != nil {
		t.Fatalf("via: process: %v, want valid", err)
	}
	_, err := Parse("x.yaml", []byte(spec+"via: http\n"))
	if err == nil {
		t.Fatal("via: http with clock: schedule and clock-skew: Parse succeeded, want both refused")
	}
	for _, want := range []string{
		"x.yaml:6: limiter.clock: schedule: the gateway decides at its own clock",
		"x.yaml:7: faults[0].kind: clock-skew: the gateway's clock is the server's: clock-skew needs via: process",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q\nwant it to contain %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "faults[1]") || strings.Contains(err.Error(), "limiter.kind") {
		t.Errorf("error %q: gateway-kill and kind lease run over HTTP, want them accepted", err)
	}
}
