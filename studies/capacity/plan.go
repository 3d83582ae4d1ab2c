package capacity

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Plan defaults.
const (
	// DefaultPerPrimaryRPS is one primary's token-bucket script rate: EVALSHA of the script under
	// redis-benchmark -P 16 -c 50 against one primary (docs/capacity.md, "Plan", has the
	// measurement and the command). It is the server's single-threaded rate with the client
	// cost pipelined away: what a primary can do for clients that pipeline. Measure your own
	// hardware with a sweep (`--from capacity.json`) or pass --per-primary-rps.
	DefaultPerPrimaryRPS = 80_000
	// DefaultHeadroom is the share of each primary kept free for failover, spikes and growth.
	DefaultHeadroom = 0.3
	// DefaultGateways and DefaultLeaseTTL describe the lease layer (as in scenarios).
	DefaultGateways = 8
	DefaultLeaseTTL = time.Second
	// MaxPlanPrimaries bounds the search: Redis Cluster's own guidance tops out near 1000 nodes.
	MaxPlanPrimaries = 1000
)

// PlanInput is what the sizing needs.
type PlanInput struct {
	// TargetRPS is the decisions per second to serve, > 0.
	TargetRPS float64 `json:"target_rps"`
	// Tenants and Theta describe the key popularity (Zipf; Theta 0 is uniform).
	Tenants int     `json:"tenants"`
	Theta   float64 `json:"theta"`
	// Headroom is the share of each primary left unused, in [0, 1). Default DefaultHeadroom.
	Headroom float64 `json:"headroom"`
	// PerPrimaryRPS is one primary's script rate and PerPrimarySource where it comes from.
	PerPrimaryRPS    float64 `json:"per_shard_rps"`
	PerPrimarySource string  `json:"per_shard_source"`
	// Lease is the lease size in tokens; 0 or 1 plans central decisions only.
	Lease int64 `json:"lease"`
	// Gateways holding leases and the lease TTL (default DefaultGateways, DefaultLeaseTTL).
	Gateways int           `json:"gateways"`
	LeaseTTL time.Duration `json:"lease_ttl_ns"`
}

// Sizing is the answer for one decision mode (central, or with leases).
type Sizing struct {
	Mode string `json:"mode"`
	// CentralRPS is the script calls per second the cluster must serve.
	CentralRPS float64 `json:"central_rps"`
	// HotKeyRPS is the hottest tenant's decisions/s and HotKeyCentralRPS its script calls/s
	// (all on one slot, so on one primary).
	HotKeyRPS        float64 `json:"hot_key_rps"`
	HotKeyCentralRPS float64 `json:"hot_key_central_rps"`
	// MeanPrimaries is what the mean load alone needs.
	MeanPrimaries int `json:"mean_primaries"`
	// Primaries is the recommendation (0 when no count is enough: see Limiting).
	Primaries int `json:"primaries"`
	// HottestShareAt is the hottest primary's share of CentralRPS at Primaries.
	HottestPrimaryShare float64 `json:"hottest_shard_share"`
	// Limiting is "mean load", "hottest shard" or "hottest key".
	Limiting string `json:"limiting"`
	// Feasible is false when the hottest key alone exceeds one primary's usable rate.
	Feasible bool `json:"feasible"`
}

// PlanResult is the recommendation and its reasoning, step by step.
type PlanResult struct {
	Input   PlanInput `json:"input"`
	Usable  float64   `json:"usable_per_shard_rps"`
	Central Sizing    `json:"central"`
	// Leased is the same sizing with leases of Input.Lease tokens (nil without --lease).
	Leased *Sizing  `json:"leased,omitempty"`
	Steps  []string `json:"steps"`
}

// Validate reports every bad field.
func (in *PlanInput) Validate() error {
	var errs []error
	if !(in.TargetRPS > 0) || math.IsInf(in.TargetRPS, 0) {
		errs = append(errs, fmt.Errorf("target-rps %v: must be > 0 decisions per second", in.TargetRPS))
	}
	if !(in.Headroom >= 0 && in.Headroom < 1) {
		errs = append(errs, fmt.Errorf("headroom %v: must be in [0, 1), e.g. 0.3 keeps 30%% of each primary free", in.Headroom))
	}
	if !(in.PerPrimaryRPS > 0) || math.IsInf(in.PerPrimaryRPS, 0) {
		errs = append(errs, fmt.Errorf("per-primary-rps %v: must be > 0 script calls per second", in.PerPrimaryRPS))
	}
	if in.Lease < 0 {
		errs = append(errs, fmt.Errorf("lease %d: must be >= 0 tokens (0: no leases)", in.Lease))
	}
	if in.Gateways < 1 {
		errs = append(errs, fmt.Errorf("gateways %d: must be >= 1", in.Gateways))
	}
	if in.LeaseTTL <= 0 {
		errs = append(errs, fmt.Errorf("lease-ttl %v: must be > 0", in.LeaseTTL))
	}
	if _, err := NewPopularity(in.Tenants, in.Theta); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// LeaseCost is the central calls/s of one key with r decisions/s when g gateways each take
// leases of size n that live ttl: a gateway sees r/g and refetches when its lease is spent or
// expires, so it fetches max(r/(n g), 1/ttl) times a second — but never more often than it has
// requests. Summed over gateways: min(r, max(r/n, g/ttl)). A hot key gets the ideal r/n; a key
// colder than g/ttl per second gains nothing from leases.
func LeaseCost(r float64, n int64, g int, ttl time.Duration) float64 {
	if n <= 1 {
		return r
	}
	return math.Min(r, math.Max(r/float64(n), float64(g)/ttl.Seconds()))
}

// MakePlan sizes the cluster for in and explains each step.
func MakePlan(in PlanInput) (*PlanResult, error) {
	if in.Gateways == 0 {
		in.Gateways = DefaultGateways
	}
	if in.LeaseTTL == 0 {
		in.LeaseTTL = DefaultLeaseTTL
	}
	if err := in.Validate(); err != nil {
		return nil, err
	}
	pop, _ := NewPopularity(in.Tenants, in.Theta)
	res := &PlanResult{Input: in, Usable: in.PerPrimaryRPS * (1 - in.Headroom)}
	say := func(f string, a ...any) { res.Steps = append(res.Steps, fmt.Sprintf(f, a...)) }
	say("One primary runs the limiter script at %s calls/s (%s); keeping %.0f%% headroom leaves %s calls/s usable per primary.",
		num(in.PerPrimaryRPS), in.PerPrimarySource, 100*in.Headroom, num(res.Usable))
	dist := fmt.Sprintf("Zipf theta %g", in.Theta)
	if in.Theta == 0 {
		dist = "uniform"
	}
	say("Traffic: %s decisions/s over %s tenants, %s; the hottest tenant takes %.3f%% (%s decisions/s), all on one slot, so on one primary.",
		num(in.TargetRPS), num(float64(in.Tenants)), dist, 100*pop.Share(0), num(in.TargetRPS*pop.Share(0)))
	res.Central = size(pop, in, res.Usable, "central", func(r float64) float64 { return r }, say)
	if in.Lease > 1 {
		l := size(pop, in, res.Usable, fmt.Sprintf("leases of %d", in.Lease),
			func(r float64) float64 { return LeaseCost(r, in.Lease, in.Gateways, in.LeaseTTL) }, say)
		res.Leased = &l
		say("Leases of %d tokens: ideally central calls fall %dx to %s/s; but with %d gateways and a %v lease TTL every key below %s decisions/s still costs one fetch per gateway per TTL (up to %s calls/s), so the cluster sees %s calls/s (%.1fx fewer). Primaries: %s -> %s; limit: %s -> %s. Overspend is then bounded by the unused leases (up to %d tokens per gateway and key).",
			in.Lease, in.Lease, num(in.TargetRPS/float64(in.Lease)), in.Gateways, in.LeaseTTL,
			num(float64(in.Lease*int64(in.Gateways))/in.LeaseTTL.Seconds()), num(float64(in.Gateways)/in.LeaseTTL.Seconds()), num(l.CentralRPS), in.TargetRPS/l.CentralRPS,
			primaries(res.Central), primaries(l), res.Central.Limiting, l.Limiting, in.Lease)
	}
	return res, nil
}

func primaries(s Sizing) string {
	if !s.Feasible {
		return "none enough"
	}
	return fmt.Sprint(s.Primaries)
}

// size finds the fewest primaries whose hottest one stays within usable, for one cost model.
func size(pop *Popularity, in PlanInput, usable float64, mode string, cost func(float64) float64, say func(string, ...any)) Sizing {
	slots := LoadBySlot(pop, in.TargetRPS, cost)
	s := Sizing{Mode: mode, CentralRPS: slots.Total()}
	s.HotKeyRPS = in.TargetRPS * pop.Share(0)
	s.HotKeyCentralRPS = cost(s.HotKeyRPS)
	s.MeanPrimaries = max(1, int(math.Ceil(s.CentralRPS/usable)))
	say("[%s] Central calls: %s/s. Mean load alone needs ceil(%s / %s) = %d primaries.",
		mode, num(s.CentralRPS), num(s.CentralRPS), num(usable), s.MeanPrimaries)
	if s.HotKeyCentralRPS > usable {
		s.Limiting = "hottest key"
		say("[%s] The hottest key needs %s calls/s on one slot, more than one primary's usable %s: no number of primaries serves it. Limiting factor: hottest key. Split it, or take leases of at least %d tokens (its calls fall to rate/size).",
			mode, num(s.HotKeyCentralRPS), num(usable), int64(math.Ceil(s.HotKeyRPS/usable)))
		return s
	}
	say("[%s] The hottest key needs %s calls/s: %.0f%% of one primary's usable rate, so it fits on one primary.",
		mode, num(s.HotKeyCentralRPS), 100*s.HotKeyCentralRPS/usable)
	for p := s.MeanPrimaries; p <= MaxPlanPrimaries; p++ {
		_, hot := slots.Hottest(p)
		if hot <= usable {
			s.Primaries, s.HottestPrimaryShare, s.Feasible = p, hot/s.CentralRPS, true
			break
		}
	}
	if !s.Feasible {
		s.Limiting = "hottest shard"
		say("[%s] Even %d primaries leave one above %s calls/s. Limiting factor: hottest shard.", mode, MaxPlanPrimaries, num(usable))
		return s
	}
	_, meanHot := slots.Hottest(s.MeanPrimaries)
	if s.Primaries == s.MeanPrimaries {
		s.Limiting = "mean load"
		say("[%s] At %d primaries the busiest one (slots hashed by CRC16, even slot ranges) carries %.2f%% = %s calls/s <= %s. Limiting factor: mean load. Recommendation: %d primaries.",
			mode, s.Primaries, 100*s.HottestPrimaryShare, num(s.HottestPrimaryShare*s.CentralRPS), num(usable), s.Primaries)
		return s
	}
	s.Limiting = "hottest shard"
	say("[%s] At %d primaries the busiest one would carry %s calls/s (%.2fx the mean) > %s; the first count whose busiest primary fits is %d (%.2f%% = %s calls/s). Limiting factor: hottest shard. Recommendation: %d primaries.",
		mode, s.MeanPrimaries, num(meanHot), meanHot/(s.CentralRPS/float64(s.MeanPrimaries)), num(usable),
		s.Primaries, 100*s.HottestPrimaryShare, num(s.HottestPrimaryShare*s.CentralRPS), s.Primaries)
	return s
}

// num formats a rate with thousands separators and no false precision.
func num(v float64) string {
	if v < 100 {
		return fmt.Sprintf("%.3g", v)
	}
	s := fmt.Sprintf("%.0f", v)
	out := make([]byte, 0, len(s)+len(s)/3)
	for i := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	return string(out)
}
