package scenarios

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
)

// Values of Spec.Via.
const (
	// ViaProcess: the engine decides every request in-process (the default).
	ViaProcess = "process"
	// ViaHTTP: the engine sets the run up as for process (cluster, limiter of any kind, leases,
	// tariffs), then serves each simulated gateway's limiter from its own ratelab gateway server
	// on a loopback port, and vegeta drives them over HTTP (package run/attack); overspend
	// is judged black-box from 200 vs 429. Every limiter kind, limiter.gateways, tariffs, every
	// cluster provider, cluster faults and gateway-kill run this way. Refused: clock: schedule
	// and clock-skew faults, since each gateway server decides at its own clock, the server's.
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
	if s.Limiter.Clock == ClockSchedule {
		bad("limiter.clock", ClockSchedule, "the gateway decides at its own clock: use clock: gateway or redis with via: http (its replays keep each tenant's order instead)")
	}
	for i, f := range s.Faults {
		if f.Kind == FaultClockSkew {
			bad(fmt.Sprintf("faults[%d].kind", i), f.Kind, "the gateway's clock is the server's: clock-skew needs via: process (cluster faults and gateway-kill run over HTTP)")
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
