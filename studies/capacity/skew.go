package capacity

import (
	"fmt"
	"math"
	"strconv"

	"ratelab/cluster"
	"ratelab/workload"
)

// MaxExactTenants is how many of the hottest tenants are hashed to their slot one by one. The
// rest (the cold tail) is spread over all slots evenly: its expected value, since CRC16 spreads
// many keys uniformly; each tail key carries at most the share of rank MaxExactTenants, so the
// tail's deviation from even is far below the head's.
const MaxExactTenants = 1 << 20

// TenantName is the name of the tenant of Zipf rank k, as the scenario engine names them
// ("tenant-0" is the hottest). Its bucket keys are rl:{tenant-k}:ENDPOINT, so the hash tag, and
// the slot, is the tenant name.
func TenantName(k int) string { return "tenant-" + strconv.Itoa(k) }

// Popularity is the share of traffic of each tenant rank: Zipf(theta) over n tenants with the
// normalisation of package workload (P(k) = (k+1)^-theta / H(n, theta)), or uniform when theta is
// 0.
type Popularity struct {
	N     int
	Theta float64
	norm  float64
}

// NewPopularity checks n and theta and precomputes the normaliser.
func NewPopularity(n int, theta float64) (*Popularity, error) {
	if n < 1 || n > 100_000_000 {
		return nil, fmt.Errorf("tenants %d: must be between 1 and 100,000,000", n)
	}
	if !(theta >= 0 && theta <= workload.MaxTheta) {
		return nil, fmt.Errorf("zipf theta %v: must be in [0, %v] (0 is uniform, 0.99 the classic skew)", theta, workload.MaxTheta)
	}
	p := &Popularity{N: n, Theta: theta, norm: float64(n)}
	if theta > 0 {
		p.norm = workload.Harmonic(uint64(n), theta)
	}
	return p, nil
}

// Share is the traffic share of rank k (0-based).
func (p *Popularity) Share(k int) float64 {
	if k < 0 || k >= p.N {
		return 0
	}
	if p.Theta == 0 {
		return 1 / p.norm
	}
	return math.Pow(float64(k)+1, -p.Theta) / p.norm
}

// TopShare is the share of the k hottest ranks.
func (p *Popularity) TopShare(k int) float64 {
	switch {
	case k <= 0:
		return 0
	case k >= p.N:
		return 1
	case p.Theta == 0:
		return float64(k) / p.norm
	}
	return workload.TopShare(uint64(p.N), p.Theta, uint64(k))
}

// SlotLoad is a load (requests or central operations per second) on each of the 16384 slots.
type SlotLoad [cluster.TotalSlots]float64

// LoadBySlot puts rate requests/s of pop's traffic on slots. Each key's rate r = rate*share
// becomes cost(r) (the identity for central decisions; fewer with leases) on its tenant's slot.
// Ranks below max(MaxExactTenants, the first rank where cost(r) == r) are hashed one by one; the
// colder tail costs its rate and is spread evenly (see MaxExactTenants).
func LoadBySlot(pop *Popularity, rate float64, cost func(r float64) float64) *SlotLoad {
	var out SlotLoad
	k := 0
	for ; k < pop.N; k++ {
		r := rate * pop.Share(k)
		c := cost(r)
		if k >= MaxExactTenants && c >= r {
			break
		}
		out[cluster.KeySlot(TenantName(k))] += c
	}
	if tail := rate * (1 - pop.TopShare(k)); tail > 0 {
		for s := range out {
			out[s] += tail / cluster.TotalSlots
		}
	}
	return &out
}

// Total is the sum over all slots.
func (l *SlotLoad) Total() float64 {
	t := 0.0
	for _, v := range l {
		t += v
	}
	return t
}

// PrimaryOfSlot is the primary (0-based) that owns slot when p primaries split the slots evenly
// in contiguous ranges, as the local launcher (and redis-cli --cluster create) does: primary i
// owns [i*16384/p, (i+1)*16384/p).
func PrimaryOfSlot(slot, p int) int {
	i := slot * p / cluster.TotalSlots
	// Integer division can put a range's first slot one primary too low; step up if needed.
	for i+1 < p && slot >= (i+1)*cluster.TotalSlots/p {
		i++
	}
	for i > 0 && slot < i*cluster.TotalSlots/p {
		i--
	}
	return i
}

// Primaries sums the slot loads into p primaries' loads.
func (l *SlotLoad) Primaries(p int) []float64 {
	out := make([]float64, p)
	for s, v := range l {
		out[PrimaryOfSlot(s, p)] += v
	}
	return out
}

// Hottest returns the index and load of the busiest of p primaries.
func (l *SlotLoad) Hottest(p int) (int, float64) {
	best, load := 0, -1.0
	for i, v := range l.Primaries(p) {
		if v > load {
			best, load = i, v
		}
	}
	return best, load
}

// Skew summarises how unevenly pop's traffic falls on p primaries.
type Skew struct {
	Tenants   int     `json:"tenants"`
	Theta     float64 `json:"theta"`
	Primaries int     `json:"primaries"`
	// HottestKeyShare is the hottest tenant's share of all traffic (per endpoint key it is this
	// times the endpoint's weight; one tenant's keys share one slot).
	HottestKeyShare float64 `json:"hottest_key_share"`
	// HottestPrimary is the index of the busiest primary and HottestPrimaryShare its share.
	HottestPrimary      int     `json:"hottest_shard"`
	HottestPrimaryShare float64 `json:"hottest_shard_share"`
	// Imbalance is HottestPrimaryShare / (1/Primaries): how much busier than the mean it is.
	Imbalance float64 `json:"imbalance"`
}

// SkewOf computes pop's Skew over p primaries by hashing tenants into slots (LoadBySlot).
func SkewOf(pop *Popularity, p int) Skew {
	slots := LoadBySlot(pop, 1, func(r float64) float64 { return r })
	return skewFrom(pop, slots, p)
}

func skewFrom(pop *Popularity, slots *SlotLoad, p int) Skew {
	i, v := slots.Hottest(p)
	share := v / slots.Total()
	return Skew{
		Tenants: pop.N, Theta: pop.Theta, Primaries: p, HottestKeyShare: pop.Share(0),
		HottestPrimary: i, HottestPrimaryShare: share, Imbalance: share * float64(p),
	}
}
