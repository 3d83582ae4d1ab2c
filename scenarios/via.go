package scenarios

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
)

// Values of Spec.Via.
const (
	// ViaProcess: the engine decides every request in-process (the default).
	ViaProcess = "process"
	// ViaHTTP: ratelab's gateway serves the scenario's limiter on a loopback port and vegeta
	// drives it over HTTP; overspend is judged black-box from 200 vs 429. The attack package runs
	// it (attack.RunScenario): this package cannot import attack, which imports this package.
	ViaHTTP = "http"
)

// MaxTraceSpeed bounds trace.speed.
const MaxTraceSpeed = 1000

// TraceCfg is a trace to replay (the format of workload/trace).
type TraceCfg struct {
	// File is the trace file, relative to the scenario file's directory. Required.
	File string `yaml:"file"`
	// Speed divides every offset: 2 replays twice as fast. Default 1.
	Speed float64 `yaml:"speed,omitempty"`
}

// httpKinds are the limiter kinds via: http serves behind the gateway.
var httpKinds = []LimiterKind{KindTokenBucket, KindMemory, KindNoop}

// validateVia checks via and trace: what the HTTP path cannot do is refused here, before a
// cluster starts, with the field and the fix.
func (s *Spec) validateVia(bad badFunc) {
	if t := s.Trace; t != nil {
		if t.File == "" {
			bad("trace.file", `""`, "name the trace to replay, e.g. trace: {file: run.trace} (write one with ratelab trace gen or run --record-trace)")
		}
		if !(t.Speed > 0 && t.Speed <= MaxTraceSpeed) || math.IsNaN(t.Speed) {
			bad("trace.speed", t.Speed, fmt.Sprintf("must be in (0, %d]: 1 replays at the recorded pace, 2 twice as fast", MaxTraceSpeed))
		}
	}
	switch s.Via {
	case ViaProcess:
		return
	case ViaHTTP:
	default:
		bad("via", fmt.Sprintf("%q", s.Via), "use process (in-process decisions, the default) or http (through ratelab's gateway, driven by vegeta)")
		return
	}
	const why = "via: http serves one limiter behind one gateway"
	if !slices.Contains(httpKinds, s.Limiter.Kind) {
		bad("limiter.kind", s.Limiter.Kind, why+": use "+orKinds(httpKinds)+", or via: process for "+string(s.Limiter.Kind))
	}
	if s.Limiter.Clock == ClockSchedule {
		bad("limiter.clock", ClockSchedule, "the gateway decides at its own clock: use clock: gateway or redis with via: http (its replays keep each tenant's order instead)")
	}
	if s.Limiter.Gateways > 1 {
		bad("limiter.gateways", s.Limiter.Gateways, why+": drop limiter.gateways or use via: process")
	}
	if s.HasTariffs() {
		bad("policy", "tariffs", "the black-box envelope of via: http judges one rate/burst policy: give policy rate and burst, or use via: process for tariffs")
	}
	if s.Cluster.Provider == ProviderExternal {
		bad("cluster.provider", ProviderExternal, "via: http does not prefix and clean up an external cluster's keys yet: use via: process for external clusters")
	}
	for i, f := range s.Faults {
		if f.Kind.OnGateway() {
			bad(fmt.Sprintf("faults[%d].kind", i), f.Kind, why+" and its clock: "+string(f.Kind)+" needs via: process (cluster faults run over HTTP)")
		}
	}
}

// resolveTrace makes a relative trace.file relative to the scenario file's directory.
func (s *Spec) resolveTrace(scenarioPath string) error {
	if s.Trace == nil || s.Trace.File == "" || filepath.IsAbs(s.Trace.File) {
		return nil
	}
	abs, err := filepath.Abs(filepath.Join(filepath.Dir(scenarioPath), s.Trace.File))
	if err != nil {
		return errors.Join(fmt.Errorf("trace.file %s", s.Trace.File), err)
	}
	s.Trace.File = abs
	return nil
}
