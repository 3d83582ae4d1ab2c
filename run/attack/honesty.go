package attack

import (
	"math"
	"slices"
	"time"

	"ratelab/results"
)

// The kinds of header lie (results.HeaderHonesty's keys); docs/attack.md states each rule.
const (
	LieRetryEarlyAllow     = "retry_after_early_allow"
	LieRetryLateDeny       = "retry_after_late_deny"
	LieRemainingDeny       = "remaining_overstated_deny"
	LieRemainingAllow      = "remaining_exhausted_allow"
	LieRemainingAboveLimit = "remaining_above_limit"
	LieResetBackwards      = "reset_backwards"
)

// honestyKinds are the kinds in report order.
var honestyKinds = []string{LieRetryEarlyAllow, LieRetryLateDeny, LieRemainingDeny, LieRemainingAllow, LieRemainingAboveLimit, LieResetBackwards}

// HeaderResolution is the time resolution of Retry-After and reset headers (whole seconds): a
// target rounding up or down is off by less than this.
const HeaderResolution = time.Second

// honestyLookback is how many earlier answers of its key each answer is compared with.
const honestyLookback = 256

// honestyProbe is how many answers an attack records before giving up on a target that sends
// no rate-limit header at all.
const honestyProbe = 10_000

// honestyMaxAnswers bounds the answers judged (about 80 bytes each): a longer attack's headers
// are judged on its first honestyMaxAnswers answers.
const honestyMaxAnswers = 2_000_000

// Claim flags of an answer.
const (
	claimRetry uint8 = 1 << iota
	claimRemaining
	claimReset
	claimLimit
)

// answer is one response as the header judge sees it. Times are ns since the attack's base:
// the target decided somewhere in [send, end]; its claims are stored as the moments they name.
type answer struct {
	send, end        int64
	retryLo, retryHi int64 // the earliest and latest moment its Retry-After names
	resetLo, resetHi int64 // the earliest and latest moment its reset names
	rem, lim         int64
	key              int32
	kind             obsKind // obsUnknown also for a fail-open/closed answer and a cost other than 1
	flags            uint8
}

func (a *answer) has(f uint8) bool { return a.flags&f != 0 }

// honesty records answers and judges their headers when the attack is over.
type honesty struct {
	o       Options
	base    time.Time
	answers []answer
	seen    bool // an answer carried a rate-limit header
	off     bool // recording stopped: no header within honestyProbe answers, or honestyMaxAnswers
	capped  bool // recording stopped at honestyMaxAnswers
}

// record keeps one answer (with its claims when it is judged: a plain 200 or 429 of cost 1).
func (h *honesty) record(key int, send, end time.Time, kind obsKind, judged bool, hd map[string][]string) {
	if h.off {
		return
	}
	a := answer{send: send.Sub(h.base).Nanoseconds(), end: end.Sub(h.base).Nanoseconds(), key: int32(key), kind: kind}
	if !judged {
		a.kind = obsUnknown
	} else if kind != obsUnknown {
		c := readClaims(hd)
		h.seen = h.seen || c.any()
		h.setClaims(&a, c)
	}
	h.answers = append(h.answers, a)
	switch {
	case !h.seen && len(h.answers) >= honestyProbe:
		h.off, h.answers = true, nil
	case len(h.answers) >= honestyMaxAnswers:
		h.off, h.capped = true, true
	}
}

// setClaims stores c in a as flags and moments since base.
func (h *honesty) setClaims(a *answer, c claims) {
	if c.retry {
		a.flags |= claimRetry
		a.retryLo, a.retryHi = h.moments(a, c.retryDate, c.retryAt, c.retrySecs)
	}
	if c.reset {
		a.flags |= claimReset
		a.resetLo, a.resetHi = h.moments(a, c.resetAbs, c.resetAt, c.resetSecs)
	}
	if c.remaining {
		a.flags |= claimRemaining
		a.rem = c.rem
	}
	if c.limit {
		a.flags |= claimLimit
		a.lim = c.lim
	}
}

// moments are the earliest and latest moments (ns since base) a header names: an absolute time
// itself, or secs after the decision, which fell between a's send and its answer.
func (h *honesty) moments(a *answer, absolute bool, at time.Time, secs float64) (lo, hi int64) {
	if absolute {
		t := at.Sub(h.base).Nanoseconds()
		return t, t
	}
	d := int64(min(secs, 1e9) * 1e9)
	return a.send + d, a.end + d
}

// tolerance is the slack of every time comparison: the headers' resolution plus one refill
// interval of the declared policy.
func (h *honesty) tolerance() time.Duration { return HeaderResolution + h.o.refillInterval() }

// judge compares every answer with the earlier answers of its key and returns the counts; nil
// when no answer carried a rate-limit header.
func (h *honesty) judge() *results.HeaderHonesty {
	if !h.seen {
		return nil
	}
	out := &results.HeaderHonesty{Checked: map[string]int64{}, Lies: map[string]int64{}, ToleranceMs: float64(h.tolerance()) / 1e6}
	slices.SortStableFunc(h.answers, func(a, b answer) int {
		if a.key != b.key {
			return int(a.key - b.key)
		}
		return cmpInt64(a.send, b.send)
	})
	for lo := 0; lo < len(h.answers); {
		hi := lo
		for hi < len(h.answers) && h.answers[hi].key == h.answers[lo].key {
			hi++
		}
		k := newKeyJudge(h, h.answers[lo:hi])
		for b := range k.a {
			k.judge(b, out)
		}
		lo = hi
	}
	for _, kind := range honestyKinds {
		if out.Checked[kind] > 0 {
			out.Lies[kind] += 0 // a checked kind shows its zero
		}
	}
	return out
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// keyJudge judges one key's answers, sorted by send time.
type keyJudge struct {
	h   *honesty
	a   []answer
	tol int64
	// pmEnd[i]: the latest end of an allowed or unknown answer before i (math.MinInt64: none).
	pmEnd []int64
	// before[i]: allowed or unknown answers before i still in flight at i's send.
	before []int32
	// concAfter[i]: allowed answers after i sent before i's answer came.
	concAfter []int32
}

// takes reports whether a may have taken a token: allowed, or an unknown outcome.
func takes(a *answer) bool { return a.kind != obsDenied }

func newKeyJudge(h *honesty, a []answer) *keyJudge {
	k := &keyJudge{h: h, a: a, tol: h.tolerance().Nanoseconds(),
		pmEnd: make([]int64, len(a)), before: make([]int32, len(a)), concAfter: make([]int32, len(a))}
	pm := int64(math.MinInt64)
	for i := range a {
		k.pmEnd[i] = pm
		if takes(&a[i]) {
			pm = max(pm, a[i].end)
		}
		for j := i - 1; j >= 0 && i-j <= honestyLookback; j-- {
			if takes(&a[j]) && a[j].end > a[i].send {
				k.before[i]++
			}
		}
		for j := i + 1; j < len(a) && j-i <= honestyLookback && a[j].send < a[i].end; j++ {
			if a[j].kind == obsAllowed {
				k.concAfter[i]++
			}
		}
	}
	return k
}

// verdicts collects one answer's results: per kind, whether it was checked and whether it lied.
type verdicts struct{ checked, lied [6]bool }

func (v *verdicts) note(kind int, lie bool) {
	v.checked[kind] = true
	v.lied[kind] = v.lied[kind] || lie
}

// judge compares answer b with the earlier answers of its key (see docs/attack.md for the
// rules) and adds its verdicts to out.
func (k *keyJudge) judge(b int, out *results.HeaderHonesty) {
	B := &k.a[b]
	if B.kind == obsUnknown {
		return
	}
	var v verdicts
	if B.has(claimRemaining) && B.has(claimLimit) {
		v.note(4, B.rem > B.lim)
	}
	// Concurrent with B and after it in send order: they may have been decided before B.
	concurrent := 0
	for j := b + 1; j < len(k.a) && j-b <= honestyLookback && k.a[j].send < B.end; j++ {
		if takes(&k.a[j]) {
			concurrent++
		}
	}
	taken, allowedSince, blocked := concurrent, 1, concurrent > 0
	for i := b - 1; i >= 0 && b-i <= honestyLookback; i-- {
		A := &k.a[i]
		if A.kind != obsUnknown && A.end <= B.send {
			k.compare(A, B, i, taken, allowedSince, blocked, &v)
		}
		if takes(A) {
			taken++
			blocked = true
		}
		if A.kind == obsAllowed && A.end <= B.end {
			allowedSince++
		}
	}
	for i, kind := range honestyKinds {
		if v.checked[i] {
			out.Checked[kind]++
		}
		if v.lied[i] {
			out.Lies[kind]++
		}
	}
}

// compare judges B against the claims of A, an earlier answer decided before B was sent.
// taken counts the answers that may have taken a token between A's decision and B's; allowed
// the allowed answers after A (B included) that ended before B; blocked says whether any
// answer that may have taken a token overlaps the time from A's send to B's answer.
func (k *keyJudge) compare(A, B *answer, i, taken, allowed int, blocked bool, v *verdicts) {
	if A.kind == obsDenied && A.has(claimRetry) {
		lo, hi := A.retryLo, A.retryHi
		switch {
		case B.kind == obsAllowed:
			v.note(0, B.end < lo-k.tol)
		case !blocked && k.pmEnd[i] <= A.send:
			v.note(1, B.send > hi+k.tol)
		}
	}
	if A.has(claimRemaining) {
		switch B.kind {
		case obsDenied:
			v.note(2, int64(taken)+int64(k.before[i]) < A.rem)
		case obsAllowed:
			// Allowed answers surely decided after A: those after it that A's answer preceded.
			n := int64(allowed) - int64(k.concAfter[i])
			room := A.rem + k.h.o.maxRefill(time.Duration(B.end-A.send)+k.h.o.refillInterval()) + 1
			v.note(3, n > room)
		}
	}
	if A.has(claimReset) && B.has(claimReset) {
		v.note(5, B.resetHi+k.tol < A.resetLo)
	}
}
