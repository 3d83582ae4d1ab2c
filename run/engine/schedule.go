package engine

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"ratelab/scenarios"
	"ratelab/workload"
	"ratelab/workload/trace"
)

// The schedule a run follows is either seeded (the spec's pacer and a workload.Stream) or a
// trace (spec.Trace). Both feed the dispatcher through workload.Pacer (intended offsets) and
// keySource (each offset's tenant, endpoint and cost), so the dispatcher does not know which.
//
// Recording (Options.RecordTrace) writes the schedule after the run from a fresh copy of
// the same source: the seeded stream is a pure function of the seed, so the copy draws exactly
// the requests the dispatcher drew (the same loop bounds: offsets before the run's end, or
// before the interrupt), and the hot path does not spend a cycle on it.

// keySource draws the tenant, endpoint and cost of each scheduled request, once per offset
// the pacer returns (sent or dropped), in order.
type keySource interface {
	next() (tenant uint64, ep int, cost uint16)
}

// streamKeys is the seeded stream: every request costs 1 token.
type streamKeys struct{ s *workload.Stream }

func (k streamKeys) next() (uint64, int, uint16) {
	t, e := k.s.Next()
	return t, e, 1
}

// replay is a trace loaded for a run, mapped onto the scenario's endpoints.
type replay struct {
	path    string
	tr      *trace.Trace
	speed   float64
	tenants []string // by trace tenant id
	epMap   []int    // trace endpoint index -> spec endpoint index
}

// traceSchedule follows a trace: Next gives record i's offset (divided by the speed), next its
// tenant, endpoint and cost.
type traceSchedule struct {
	r      *replay
	i, k   int
	rate   float64
	window time.Duration
}

var _ workload.Pacer = (*traceSchedule)(nil)

func (t *traceSchedule) Next() (time.Duration, bool) {
	if t.i >= len(t.r.tr.Requests) {
		return 0, false
	}
	at := t.r.tr.Requests[t.i].At
	t.i++
	return t.r.offset(at), true
}

func (t *traceSchedule) Rate(elapsed time.Duration) float64 {
	if elapsed < 0 || elapsed >= t.window {
		return 0
	}
	return t.rate
}

func (t *traceSchedule) next() (uint64, int, uint16) {
	r := t.r.tr.Requests[t.k]
	t.k++
	return uint64(r.Tenant), t.r.epMap[r.Endpoint], uint16(r.Cost)
}

// offset is a trace time at the replay's speed.
func (r *replay) offset(at time.Duration) time.Duration {
	if r.speed == 1 {
		return at
	}
	return time.Duration(float64(at) / r.speed)
}

// maxReplayCost is the largest cost a replayed request may have (the dispatcher's job holds 16 bits).
const maxReplayCost = math.MaxUint16

// loadReplay reads spec.Trace's file and returns a copy of spec whose duration, rate and
// tenant count are the trace's, with the trace mapped onto spec's endpoints. A damaged trace is
// refused: replaying part of it would not reproduce the recording.
func loadReplay(spec *scenarios.Spec) (*scenarios.Spec, *replay, error) {
	path := spec.Trace.File
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("trace.file: %w", err)
	}
	defer f.Close()
	tr, err := trace.ReadAll(f)
	if err != nil {
		n := 0
		if tr != nil {
			n = len(tr.Requests)
		}
		return nil, nil, fmt.Errorf("trace.file %s: %w (%d records readable; ratelab trace info %s shows the damage)", path, err, n, path)
	}
	if len(tr.Requests) == 0 {
		return nil, nil, fmt.Errorf("trace.file %s: no requests to replay", path)
	}
	rp := &replay{path: path, tr: tr, speed: spec.Trace.Speed}
	byName := map[string]int{}
	for i, e := range spec.Endpoints {
		byName[e.Name] = i
	}
	var missing []string
	for _, e := range tr.Endpoints {
		i, ok := byName[e]
		if !ok {
			missing = append(missing, fmt.Sprintf("%q", e))
		}
		rp.epMap = append(rp.epMap, i)
	}
	if len(missing) > 0 {
		have := make([]string, len(spec.Endpoints))
		for i, e := range spec.Endpoints {
			have[i] = e.Name
		}
		return nil, nil, fmt.Errorf("trace.file %s: endpoints %s are not in the scenario's endpoints [%s]: add them (endpoints: - {name: %s, weight: 1}) or replay the trace with a scenario that has them",
			path, strings.Join(missing, ", "), strings.Join(have, " "), strings.Trim(missing[0], `"`))
	}
	nTenants := len(tr.Tenants)
	for i, r := range tr.Requests {
		if r.Cost > maxReplayCost {
			return nil, nil, fmt.Errorf("trace.file %s: record %d costs %d tokens: the engine replays costs up to %d", path, i, r.Cost, maxReplayCost)
		}
		if len(tr.Tenants) == 0 {
			nTenants = max(nTenants, int(r.Tenant)+1)
		}
	}
	if nTenants > 100_000_000 {
		return nil, nil, fmt.Errorf("trace.file %s: %d tenants: the engine keys at most 100,000,000", path, nTenants)
	}
	rp.tenants = make([]string, nTenants)
	for i := range rp.tenants {
		rp.tenants[i] = tr.TenantName(uint32(i))
	}
	s := *spec
	window, rate := tr.Window(rp.speed)
	s.Duration, s.Load.Rate = scenarios.Duration(window), rate
	s.Tenants.Count = nTenants
	return &s, rp, nil
}

// newSchedule returns the pacer and key source of a run: the trace's, or the seeded ones.
func newSchedule(spec *scenarios.Spec, rp *replay) (workload.Pacer, keySource, error) {
	if rp != nil {
		ts := &traceSchedule{r: rp, rate: spec.Load.Rate, window: time.Duration(spec.Duration)}
		return ts, ts, nil
	}
	keys, mix, _, err := traffic(spec)
	if err != nil {
		return nil, nil, err
	}
	pacer, err := newPacer(spec)
	if err != nil {
		return nil, nil, err
	}
	return pacer, streamKeys{workload.NewStream(spec.Seed, keys, mix)}, nil
}

// recordSchedule writes the requests the run scheduled — every offset before until, offered
// whether it was sent or dropped — to path as a trace: intended offset, tenant, endpoint, cost.
// start is the run's time of offset 0. It returns how many requests it wrote.
func recordSchedule(path string, spec *scenarios.Spec, rp *replay, start time.Time, until time.Duration, seconds int) (n uint64, err error) {
	pacer, keys, err := newSchedule(spec, rp)
	if err != nil {
		return 0, err
	}
	hdr := trace.Header{Start: start.Truncate(time.Microsecond), TenantPrefix: trace.DefaultTenantPrefix}
	for _, e := range spec.Endpoints {
		hdr.Endpoints = append(hdr.Endpoints, e.Name)
	}
	if rp != nil {
		hdr.TenantPrefix, hdr.Tenants = rp.tr.TenantPrefix, rp.tr.Tenants
	}
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return 0, fmt.Errorf("record trace: %w", err)
		}
	}
	f, err := os.Create(path)
	if err != nil {
		return 0, fmt.Errorf("record trace: %w", err)
	}
	defer func() {
		if cerr := f.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("record trace %s: %w", path, cerr)
		}
	}()
	// The Writer hands each block of MaxBlockRequests to f in one Write: no bufio needed.
	w, err := trace.NewWriter(f, hdr)
	if err != nil {
		return 0, fmt.Errorf("record trace %s: %w", path, err)
	}
	for {
		off, ok := pacer.Next()
		if !ok || off >= until || int(off/time.Second) >= seconds {
			break
		}
		t, ep, cost := keys.next()
		if err := w.Write(trace.Request{At: off, Tenant: uint32(t), Endpoint: uint16(ep), Cost: uint32(cost)}); err != nil {
			return w.Count(), fmt.Errorf("record trace %s: %w", path, err)
		}
	}
	if err := w.Close(); err != nil {
		return w.Count(), fmt.Errorf("record trace %s: %w", path, err)
	}
	return w.Count(), nil
}

// TraceOf generates the requests the engine schedules for spec — its pacer and load stages,
// tenant distribution, endpoint mix and seed — as a trace: the same requests `ratelab run`
// offers, for the HTTP driver to replay or for a file. It shares traffic and the spec's
// profile with the run's own schedule, so the two cannot drift apart.
func TraceOf(spec *scenarios.Spec) (*trace.Trace, error) {
	keys, mix, names, err := traffic(spec)
	if err != nil {
		return nil, err
	}
	prof, err := spec.Profile()
	if err != nil {
		return nil, err
	}
	return trace.Generate(trace.GenOptions{
		Rate: spec.Load.Rate, Duration: time.Duration(spec.Duration), Pacer: spec.Load.Pacer, Profile: prof,
		Seed: spec.Seed, Keys: keys, Mix: mix, Endpoints: names,
	})
}

// traffic builds the key distribution and endpoint mix a spec describes.
func traffic(spec *scenarios.Spec) (workload.KeyDist, *workload.Mix, []string, error) {
	keys, err := keyDist(spec)
	if err != nil {
		return nil, nil, nil, err
	}
	names := make([]string, len(spec.Endpoints))
	weights := make([]float64, len(spec.Endpoints))
	for i, e := range spec.Endpoints {
		names[i], weights[i] = e.Name, e.Weight
	}
	mix, err := workload.NewMix(names, weights)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("endpoints: %w", err)
	}
	return keys, mix, names, nil
}

func keyDist(spec *scenarios.Spec) (workload.KeyDist, error) {
	n := uint64(spec.Tenants.Count)
	var (
		k   workload.KeyDist
		err error
	)
	switch spec.Tenants.Distribution {
	case "uniform":
		k, err = workload.NewUniform(n)
	case "hotspot":
		k, err = workload.NewHotspot(n, uint64(spec.Tenants.HotKeys), spec.Tenants.HotShare)
	default:
		k, err = workload.NewZipf(n, spec.Tenants.Theta)
	}
	if err != nil {
		return nil, fmt.Errorf("tenants: %w", err)
	}
	return k, nil
}

// newPacer returns the spec's arrival schedule: at load.rate, or along load.stages.
func newPacer(spec *scenarios.Spec) (workload.Pacer, error) {
	var p workload.Pacer
	prof, err := spec.Profile()
	switch {
	case err != nil:
	case prof != nil && spec.Load.Pacer == "poisson":
		p = workload.NewRampPoisson(prof, spec.Seed)
	case prof != nil:
		p = workload.NewRamp(prof)
	case spec.Load.Pacer == "poisson":
		p, err = workload.NewPoisson(spec.Load.Rate, time.Duration(spec.Duration), spec.Seed)
	default:
		p, err = workload.NewConstant(spec.Load.Rate, time.Duration(spec.Duration))
	}
	if err != nil {
		return nil, fmt.Errorf("load: %w", err)
	}
	return p, nil
}
