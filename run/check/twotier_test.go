package check

import (
	"testing"

	"ratelab/limiter"
)

func TestTwoTierCheckerJudgesBothTiers(t *testing.T) {
	t.Parallel()
	// 2 tenants x 2 endpoints; a quota of 3 per 1000 ms window per tenant; buckets of 2 tokens
	// refilled at 1 per second.
	c := NewTwoTier(2, 2, limiter.BucketPolicy{Rate: 1, Burst: 2}, 3, 1000)
	const w0 = 1_000_000 // a window start
	steps := []struct {
		name    string
		key     int
		at      int64
		allowed bool
		want    Verdict
	}{
		{"tenant 0 read, 1st", 0, w0 + 1, true, Conforming},
		{"tenant 0 read, 2nd", 0, w0 + 2, true, Conforming},
		{"tenant 0 read: bucket empty, quota has room", 0, w0 + 3, true, Overspend},
		{"tenant 0 write: its own bucket, the shared quota's 3rd", 1, w0 + 4, true, Conforming},
		{"tenant 0 write: the quota is full", 1, w0 + 5, true, Overspend},
		{"tenant 0 write denied: the full quota explains it", 1, w0 + 6, false, Denied},
		{"tenant 1 is not affected", 2, w0 + 7, true, Conforming},
		{"tenant 1 denied with room in both tiers", 2, w0 + 8, false, FalseDeny},
		{"tenant 0 in the next window: quota reset, write bucket has a token", 1, w0 + 1000, true, Conforming},
	}
	for _, s := range steps {
		if got := c.ObserveAs(s.key, s.at, 1, s.allowed, Cause(limiter.Central)); got != s.want {
			t.Errorf("%s: verdict %v, want %v", s.name, got, s.want)
		}
	}
	tot := c.Totals()
	over, denied := c.QuotaTotals()
	if tot.Allowed != 7 || tot.Denied != 2 || tot.OverspendRequests != 2 || tot.FalseDenies != 1 || over != 1 || denied != 1 {
		t.Errorf("totals %+v, quota overspend %d denied %d: want 7 allowed, 2 denied, 2 overspend (1 by the quota), 1 false deny, 1 quota denial", tot, over, denied)
	}
	if tot.ByCause["central"] != 2 {
		t.Errorf("by cause %v: want both overspends under central", tot.ByCause)
	}
}

// TestTwoTierCheckerWithdrawsReorderedQuotaDenials: the limiter filled the quota with requests
// the envelope sees only after the denial they caused; once they fill the envelope's quota too,
// the denial is withdrawn. A denial with the quota never filled stays.
func TestTwoTierCheckerWithdrawsReorderedQuotaDenials(t *testing.T) {
	t.Parallel()
	c := NewTwoTier(2, 1, limiter.BucketPolicy{Rate: 100, Burst: 100}, 3, 60_000)
	var cancelled int64
	c.SetReorderWindow(200, func(_, n int64) { cancelled += n })
	const t0 = 6_000_000
	c.ObserveAs(0, t0, 1, true, 0)
	if v := c.ObserveAs(0, t0+1, 1, false, 0); v != FalseDeny {
		t.Fatalf("denial with room: %v, want a provisional false deny", v)
	}
	c.ObserveAs(0, t0+2, 1, true, 0)
	c.ObserveAs(0, t0+3, 1, true, 0) // the quota is full: the denial is explained
	c.ObserveAs(1, t0+4, 1, true, 0)
	c.ObserveAs(1, t0+5, 1, false, 0) // tenant 1's quota never fills
	tot := c.Totals()
	if tot.FalseDenies != 1 || tot.Withdrawn != 1 || cancelled != 1 {
		t.Errorf("totals %+v, cancelled %d: want tenant 0's denial withdrawn and tenant 1's kept", tot, cancelled)
	}
}

// TestTwoTierCheckerUnknownOutcomeIsNotConfirmedOverspend: a timed-out decision is counted
// against the quota in D only, so when the limiter later allows a request only the room the
// timeout might have taken could pay for, that is not confirmed overspend.
func TestTwoTierCheckerUnknownOutcomeIsNotConfirmedOverspend(t *testing.T) {
	t.Parallel()
	c := NewTwoTier(1, 1, limiter.BucketPolicy{Rate: 100, Burst: 100}, 2, 60_000)
	const t0 = 6_000_000
	c.ObserveAs(0, t0, 1, true, 0)
	c.ObserveUnknown(0, t0+1, 1, true)
	if v := c.ObserveAs(0, t0+2, 1, true, 0); v != Conforming {
		t.Errorf("allowed after an unknown outcome that must not have run: %v, want conforming", v)
	}
	if v := c.ObserveAs(0, t0+3, 1, true, 0); v != Overspend {
		t.Errorf("allowed beyond the quota with no credit left: %v, want overspend", v)
	}
}

// TestTwoTierQuotaJudgesEachRequestInItsOwnWindow: a request observed after one of the next
// quota window is counted in its own window — the one the limiter counted it in — not in the
// newest the envelope has seen.
func TestTwoTierQuotaJudgesEachRequestInItsOwnWindow(t *testing.T) {
	t.Parallel()
	c := NewTwoTier(1, 1, limiter.BucketPolicy{Rate: 1000, Burst: 1000}, 2, 1000)
	const w1 = 6_000_000 // a window start
	steps := []struct {
		name    string
		at      int64
		allowed bool
		want    Verdict
	}{
		{"window 1, 1st", w1 + 998, true, Conforming},
		{"window 1, 2nd: full", w1 + 999, true, Conforming},
		{"window 2, 1st", w1 + 1000, true, Conforming},
		{"window 1 again, observed late: beyond its quota", w1 + 999, true, Overspend},
		{"window 1 again, denied late: its quota explains it", w1 + 999, false, Denied},
		{"window 2, 2nd: counted apart from window 1's late ones", w1 + 1001, true, Conforming},
		{"window 2, 3rd: full", w1 + 1002, true, Overspend},
	}
	for _, s := range steps {
		if got := c.ObserveAs(0, s.at, 1, s.allowed, 0); got != s.want {
			t.Errorf("%s: verdict %v, want %v", s.name, got, s.want)
		}
	}
	over, denied := c.QuotaTotals()
	if tot := c.Totals(); tot.OverspendRequests != 2 || tot.FalseDenies != 0 || over != 2 || denied != 1 {
		t.Errorf("totals %+v, quota overspend %d denied %d: want 2 overspend by the quota, 1 quota denial, no false deny",
			tot, over, denied)
	}
}
