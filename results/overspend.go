package results

// Overspend compares the allowed stream of every key with its policy's exact envelope: an
// allowed request the envelope had no tokens for is overspend; a denied request the envelope had
// tokens for is a false deny. Requests let through or denied by a fail policy are judged too.
//
// A decision that timed out may or may not have run in the store: its outcome is unknown. Every
// figure is given at both ends of what the unknown outcomes allow, as Jepsen's checkers treat
// indeterminate operations: CONFIRMED holds however they went (overspend with every unknown
// assumed not debited, false denies with every unknown assumed debited), POSSIBLE under some
// resolution (the opposite assumptions). The unprefixed figures are the confirmed ones.
type Overspend struct {
	// Requests is the number of allowed requests beyond the envelope (confirmed).
	Requests int64 `json:"requests"`
	// Tokens is the sum of the costs of those requests, in tokens (confirmed).
	Tokens int64 `json:"tokens"`
	// Ratio is Requests / (Outcomes.Allowed + Outcomes.FailedOpen): overspend per request let
	// through, by the limiter or by fail-open (0 when nothing was let through); see Ratio.
	Ratio float64 `json:"ratio"`
	// PossibleRequests, PossibleTokens and PossibleRatio are the same with every unknown outcome
	// assumed debited: the most overspend the run can have had.
	PossibleRequests int64   `json:"possible_requests"`
	PossibleTokens   int64   `json:"possible_tokens"`
	PossibleRatio    float64 `json:"possible_ratio"`
	// FalseDenies is the number of denied requests the envelope had tokens for (confirmed).
	FalseDenies int64 `json:"false_denies"`
	// FalseDenyRatio is FalseDenies / (Outcomes.Denied + Outcomes.FailedClosed): false denies per
	// request denied, by the limiter or by fail-closed (0 when nothing was denied).
	FalseDenyRatio float64 `json:"false_deny_ratio"`
	// PossibleFalseDenies and PossibleFalseDenyRatio assume every unknown outcome not debited.
	PossibleFalseDenies    int64   `json:"possible_false_denies"`
	PossibleFalseDenyRatio float64 `json:"possible_false_deny_ratio"`
	// UnknownOutcomes counts decisions whose outcome the client never learnt (timeouts).
	UnknownOutcomes int64 `json:"unknown_outcomes"`
	// ByCause splits Requests by the cause the engine attributed ("failover", "fail-open",
	// "lease", "clock-skew", "window-boundary", "unattributed"...).
	ByCause map[string]int64 `json:"by_cause"`
	// BurstExcess is how far the allowed stream went beyond the burst (see BurstExcess).
	BurstExcess BurstExcess `json:"burst_excess"`
	// Bound is what the run's design promises of the burst excess, and whether it held.
	Bound Bound `json:"bound"`
}

// BurstExcess is, per key, the smallest b' such that the key's allowed stream conforms to the
// policy's rate with burst b', minus the burst: the deepest deficit of the exact bucket when
// overspent tokens are debited too (and every unknown outcome debited, so an upper bound for
// every resolution). Unlike the cumulative overspend it does not grow with idle episodes: it is
// what a lease or a failover can let through at once. For window policies it is 0.
type BurstExcess struct {
	// Tokens is the sum over keys.
	Tokens float64 `json:"tokens"`
	// WorstKey and WorstTokens name the key with the largest excess.
	WorstKey    string  `json:"worst_key"`
	WorstTokens float64 `json:"worst_tokens"`
}

// Bound is the design's promise for the burst excess of every key, in tokens, by source: for
// leases the most tokens outstanding in one key's leases at any moment (BoundLeases), plus what
// named faults add (BoundReplicationGap, BoundIsolatedWindow). A source the run has but could
// not measure is listed in Unmeasured with the reason, never counted as 0. Overspend.JudgeBound
// sets Tokens and Within from Sources and Unmeasured.
//
// A bound is per key, so bounds of disjoint keys do not add: Merge keeps the largest part's
// bound (every key of the merged run was promised at most that) and judges Within part by part
// (see Merge).
type Bound struct {
	// Tokens is the sum of Sources: the bound on BurstExcess.WorstTokens.
	Tokens float64 `json:"tokens"`
	// Sources names where the bound comes from (BoundLeases, BoundReplicationGap,
	// BoundIsolatedWindow; BoundV1 in a summary read from a v1 file). A source present with 0
	// tokens is a promise of no excess; no source at all is no promise.
	Sources map[string]float64 `json:"sources"`
	// Within is BurstExcess.WorstTokens <= Tokens. It is nil (JSON null) when no bound applies
	// (Sources and Unmeasured empty), in a summary read from a v1 file, and when the worst key
	// is beyond Tokens while a source is unmeasured: what that source adds is not known.
	Within *bool `json:"within"`
	// AllKeys is the same promise for BurstExcess.Tokens, the excess summed over keys; nil when
	// no source measured one (a summary of an older ratelab).
	AllKeys *BoundSum `json:"all_keys,omitempty"`
	// Unmeasured lists the sources the run has whose tokens could not be measured, with why.
	Unmeasured []Unmeasured `json:"unmeasured,omitempty"`
}

// BoundSum bounds the burst excess summed over keys (BurstExcess.Tokens), by source: a fault's
// source is the same as in Bound (what it may return in all bounds any one key's share), the
// leases' is every key's most outstanding, summed over keys.
type BoundSum struct {
	// Tokens is the sum of Sources.
	Tokens float64 `json:"tokens"`
	// Sources has the names of Bound.Sources.
	Sources map[string]float64 `json:"sources"`
	// Within is BurstExcess.Tokens <= Tokens, nil as Bound.Within is.
	Within *bool `json:"within"`
}

// Unmeasured is a bound's source the run has but could not measure.
type Unmeasured struct {
	// Source is a name of Bound.Sources (BoundReplicationGap, BoundClockSkew, ...).
	Source string `json:"source"`
	// Reason says why it was not measured, e.g. "kill-primary of 127.0.0.1:7001: INFO
	// replication on its replica failed: i/o timeout".
	Reason string `json:"reason"`
}

// Names of Bound.Sources.
const (
	// BoundLeases is the most tokens outstanding in one key's leases at any moment.
	BoundLeases = "leases"
	// BoundReplicationGap is the tokens a failover can return: the replication gap read right
	// before the fault, in script calls, times the most tokens one call debits (in lease mode a
	// lost grant returns its whole lease).
	BoundReplicationGap = "replication_gap"
	// BoundIsolatedWindow is the tokens a partitioned primary may acknowledge in the window
	// before it stops taking writes, which its promoted replica never sees.
	BoundIsolatedWindow = "isolated_window"
	// BoundFailOpen is what a fail-open policy lets through beyond the store; no bound is
	// derived for it (it is listed in Unmeasured).
	BoundFailOpen = "fail_open"
	// BoundClockSkew is what a gateway clock set ahead lets the store refill early; no bound is
	// derived for it (it is listed in Unmeasured).
	BoundClockSkew = "clock_skew"
	// BoundDaemonState is what a gubernator daemon killed and restarted gives back: it keeps
	// its buckets in memory, so every key it owned starts again with a full burst; no bound is
	// derived for it (it is listed in Unmeasured: which keys a daemon owns is gubernator's hash
	// ring, which the run does not read).
	BoundDaemonState = "daemon_state"
	// BoundV1 is a v1 summary's bound_tokens: v1's bound on the whole run's overspend, not a
	// per-key bound on the burst excess.
	BoundV1 = "v1"
)

// boundSlack absorbs float rounding in Within: the envelope's refill arithmetic and the sum of
// the sources may differ in the last bits from the same number of tokens.
const boundSlack = 1e-9

// JudgeBound sets Bound.Tokens to the sum of Bound.Sources and Bound.Within to whether
// BurstExcess.WorstTokens is within it, and the same for Bound.AllKeys against
// BurstExcess.Tokens. Within is nil when no bound applies (Sources and Unmeasured empty), and
// when the excess is beyond the measured tokens while a source is unmeasured.
func (o *Overspend) JudgeBound() {
	b := &o.Bound
	b.Tokens, b.Within = judge(b.Sources, b.Unmeasured, o.BurstExcess.WorstTokens)
	if b.AllKeys != nil {
		b.AllKeys.Tokens, b.AllKeys.Within = judge(b.AllKeys.Sources, b.Unmeasured, o.BurstExcess.Tokens)
	}
}

// judge sums sources and says whether excess is within the sum (see JudgeBound).
func judge(sources map[string]float64, unmeasured []Unmeasured, excess float64) (float64, *bool) {
	var tokens float64
	for _, t := range sources {
		tokens += t
	}
	if len(sources) == 0 && len(unmeasured) == 0 {
		return tokens, nil
	}
	within := excess <= tokens+boundSlack*max(1, tokens)
	if !within && len(unmeasured) > 0 {
		return tokens, nil
	}
	return tokens, &within
}

// TokensBack counts the debits a fault returned: tokens of requests the clients saw allowed by
// the store whose debit is missing from the bucket state the cluster kept (the promoted
// replica's, after a kill or a healed partition). It is read from each bucket's debit audit
// against the clients' own count once the load has stopped, so it is a range: an unknown
// outcome (a timeout) may have debited or not.
type TokensBack struct {
	// Min assumes no unknown outcome's debit survived (every debit the audit counts is an
	// allowed request's); Max assumes every one did, each hiding a lost debit of its key
	// (capped at the key's allowed tokens). See docs/partitions.md.
	Min int64 `json:"min"`
	Max int64 `json:"max"`
	// Keys is the number of keys that lost at least Min > 0 tokens.
	Keys int `json:"keys"`
	// Bound is what the cluster's design lets an isolated or killed primary acknowledge that
	// its replica never sees, in tokens (see docs/partitions.md).
	Bound float64 `json:"bound"`
	// Verdict judges the range against Bound: VerdictWithin when Max kept it, VerdictBeyond
	// when even Min exceeds it, VerdictUndetermined when Bound falls inside the range (the
	// unknown outcomes decide, and the run cannot tell which way they went).
	Verdict string `json:"verdict"`
	// ByFault splits Min by the fault that took the key's primary away last (a kill or a
	// partition), keyed "kind target" (e.g. "partition hottest"); "none" for a key no fault
	// touched.
	ByFault map[string]int64 `json:"by_fault,omitempty"`
}

// Values of TokensBack.Verdict.
const (
	VerdictWithin       = "within"
	VerdictBeyond       = "beyond"
	VerdictUndetermined = "undetermined"
)

// JudgeBound sets Verdict from Min, Max and Bound.
func (tb *TokensBack) JudgeBound() {
	switch {
	case float64(tb.Max) <= tb.Bound+boundSlack:
		tb.Verdict = VerdictWithin
	case float64(tb.Min) > tb.Bound+boundSlack:
		tb.Verdict = VerdictBeyond
	default:
		tb.Verdict = VerdictUndetermined
	}
}
