package faults

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"ratelab/run/check"
	"ratelab/scenarios"
)

func TestActiveKind(t *testing.T) {
	t.Parallel()
	specs := []scenarios.FaultSpec{
		{At: scenarios.Duration(5 * time.Second), Kind: scenarios.FaultKillPrimary},
		{At: scenarios.Duration(2 * time.Second), Kind: scenarios.FaultPause},
	}
	r := New(nil, specs, causeRun{}, nil, Config{})
	if k := r.ActiveKind(3 * time.Second); k != "" {
		t.Errorf("no fault holding its cause: activeKind %q, want none", k)
	}
	release := r.hold("pause")
	if c, ok := r.CurrentCause(); !ok || c != 9 {
		t.Errorf("holding a pause: cause %d, %v; want the run's cause 9", c, ok)
	}
	tests := []struct {
		have time.Duration
		want string
	}{{time.Second, ""}, {2 * time.Second, string(scenarios.FaultPause)}, {4 * time.Second, string(scenarios.FaultPause)}, {6 * time.Second, string(scenarios.FaultKillPrimary)}}
	for _, tc := range tests {
		if k := r.ActiveKind(tc.have); k != tc.want {
			t.Errorf("activeKind(%v) = %q, want %q", tc.have, k, tc.want)
		}
	}
	release()
	if k := r.ActiveKind(6 * time.Second); k != "" {
		t.Errorf("after release: activeKind %q, want none", k)
	}
	var none *Runner
	if k := none.ActiveKind(time.Second); k != "" {
		t.Errorf("a run without faults: activeKind %q", k)
	}
}

// causeRun names every cause 9.
type causeRun struct{ noRun }

func (causeRun) CauseFor(string) check.Cause { return 9 }

// clocks are gateways with clocks only, recording every offset set.
type clocks struct {
	noGateways
	mu  sync.Mutex
	set []time.Duration
}

func (c *clocks) Count() int         { return 2 }
func (c *clocks) Has(p Feature) bool { return p == GatewayClocks }
func (c *clocks) SetSkew(g int, off time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.set = append(c.set, off)
}

// A gateway fault changes the part the run has and is recorded as failed where the run lacks it.
func TestGatewayFaultNeedsItsPart(t *testing.T) {
	t.Parallel()
	skew := scenarios.FaultSpec{Kind: scenarios.FaultClockSkew, Target: "gateway:1", Offset: scenarios.Duration(time.Second), For: scenarios.Duration(time.Millisecond)}
	kill := scenarios.FaultSpec{Kind: scenarios.FaultGatewayKill, Target: "gateway:0"}
	gw := &clocks{}
	r := New(nil, nil, nil, gw, Config{})
	r.injectGateway(context.Background(), skew, 1)
	r.injectGateway(context.Background(), kill, 2)
	ev := r.Recorded()
	if len(ev) != 2 || ev[0].Failed || !ev[1].Failed || !strings.Contains(ev[1].Error, "no such gateway state") {
		t.Fatalf("events %+v: want the skew carried out and the kill failed (no leases)", ev)
	}
	if want := []time.Duration{time.Second, 0}; !slices.Equal(gw.set, want) {
		t.Errorf("offsets set %v, want %v (skewed, then back)", gw.set, want)
	}
	none := New(nil, nil, nil, nil, Config{})
	none.injectGateway(context.Background(), skew, 1)
	if ev := none.Recorded(); len(ev) != 1 || !ev[0].Failed {
		t.Errorf("events %+v: a run without gateways must record the skew as failed", ev)
	}
}
