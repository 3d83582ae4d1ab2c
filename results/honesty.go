package results

// HeaderHonesty is what an HTTP attack found of its target's rate-limit headers (Retry-After,
// RateLimit / RateLimit-Policy, RateLimit-* and X-RateLimit-*), judged against the answers that
// followed, per tenant and endpoint. Kinds are the attack's (see docs/attack.md); a kind is
// listed in Checked when at least one answer was compared against an earlier claim of that kind.
type HeaderHonesty struct {
	// Checked counts, per kind, the answers compared against at least one earlier claim.
	Checked map[string]int64 `json:"checked"`
	// Lies counts, per kind, the answers that contradict at least one earlier claim beyond the
	// tolerance.
	Lies map[string]int64 `json:"lies"`
	// ToleranceMs is the time tolerance the judgement allowed: the headers' one-second
	// resolution plus one refill interval of the declared policy.
	ToleranceMs float64 `json:"tolerance_ms"`
}

// TotalLies is the sum of Lies over the kinds.
func (h *HeaderHonesty) TotalLies() int64 {
	var n int64
	for _, v := range h.Lies {
		n += v
	}
	return n
}
