package capacity

import (
	"math"
	"math/rand/v2"
	"testing"

	"ratelab/cluster"
	"ratelab/workload"
)

func TestPrimaryOfSlotMatchesEvenRanges(t *testing.T) {
	t.Parallel()
	for _, p := range []int{1, 2, 3, 7, 30, 1000} {
		for s := range cluster.TotalSlots {
			i := PrimaryOfSlot(s, p)
			if lo, hi := i*cluster.TotalSlots/p, (i+1)*cluster.TotalSlots/p; s < lo || s >= hi {
				t.Fatalf("p=%d slot %d -> shard %d owning [%d,%d)", p, s, i, lo, hi)
			}
		}
	}
}

func TestPopularityMatchesWorkloadZipf(t *testing.T) {
	t.Parallel()
	pop, err := NewPopularity(1000, 0.99)
	if err != nil {
		t.Fatal(err)
	}
	// The same normalisation as the sampler the engine draws keys with: compare the hottest
	// rank's share with draws from workload.Zipf.
	z, err := workload.NewZipf(1000, 0.99)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(3, 4))
	const draws = 200_000
	hits := 0
	for range draws {
		if z.Draw(r) == 0 {
			hits++
		}
	}
	got, want := float64(hits)/draws, pop.Share(0)
	if sd := math.Sqrt(want * (1 - want) / draws); math.Abs(got-want) > 5*sd {
		t.Errorf("rank 0 drawn %.5f of the time, Share(0) = %.5f (5 sd = %.5f)", got, want, 5*sd)
	}
	sum := 0.0
	for k := range pop.N {
		sum += pop.Share(k)
	}
	if math.Abs(sum-1) > 1e-9 {
		t.Errorf("shares sum to %v, want 1", sum)
	}
	u, _ := NewPopularity(50, 0)
	if u.Share(7) != 0.02 || u.TopShare(10) != 0.2 {
		t.Errorf("uniform: Share(7) = %v, TopShare(10) = %v; want 0.02, 0.2", u.Share(7), u.TopShare(10))
	}
}

func TestSkewHashesTheHead(t *testing.T) {
	t.Parallel()
	pop, _ := NewPopularity(10_000, 0.99)
	const p = 3
	sk := SkewOf(pop, p)
	// Brute force: every tenant to its slot's primary.
	loads := make([]float64, p)
	for k := range pop.N {
		loads[PrimaryOfSlot(cluster.KeySlot(TenantName(k)), p)] += pop.Share(k)
	}
	hot := 0
	for i := range loads {
		if loads[i] > loads[hot] {
			hot = i
		}
	}
	if sk.HottestPrimary != hot || math.Abs(sk.HottestPrimaryShare-loads[hot]) > 1e-9 {
		t.Errorf("SkewOf = primary %d share %v, brute force primary %d share %v", sk.HottestPrimary, sk.HottestPrimaryShare, hot, loads[hot])
	}
	if sk.HottestKeyShare < 0.09 || sk.HottestKeyShare > 0.11 {
		t.Errorf("hottest key share %v: Zipf 0.99 over 10,000 ranks gives ~0.1", sk.HottestKeyShare)
	}
	if sk.Imbalance < 1 {
		t.Errorf("imbalance %v < 1: the hottest primary cannot be below the mean", sk.Imbalance)
	}
}

// A cold tail spread by expectation: 2M uniform tenants on 4 primaries stay within 1% of even.
func TestSkewTailIsEven(t *testing.T) {
	t.Parallel()
	pop, _ := NewPopularity(2_000_000, 0)
	sk := SkewOf(pop, 4)
	if sk.Imbalance > 1.01 {
		t.Errorf("uniform 2M tenants on 4 primaries: imbalance %v, want ~1", sk.Imbalance)
	}
}
