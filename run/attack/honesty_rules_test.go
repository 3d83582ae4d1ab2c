package attack

import (
	"testing"
	"time"

	"ratelab/limiter"
)

// judgeAnswers judges answers of one key (times in ms since base) under a bucket of rate 10/s
// (tolerance 1 s + 100 ms) and returns the lies and checks by kind.
func judgeAnswers(t *testing.T, as []answer) (lies, checked map[string]int64) {
	t.Helper()
	h := &honesty{o: Options{Policy: limiter.BucketPolicy{Rate: 10, Burst: 1}}, seen: true, answers: as}
	out := h.judge()
	return out.Lies, out.Checked
}

const ms = int64(time.Millisecond)

// retryAnswer is a 429 sent at send ms, answered 1 ms later, with Retry-After secs.
func retryAnswer(send int64, secs int64) answer {
	a := answer{send: send * ms, end: (send + 1) * ms, kind: obsDenied, flags: claimRetry}
	a.retryLo, a.retryHi = a.send+secs*1e9, a.end+secs*1e9
	return a
}

func plain(send int64, kind obsKind) answer {
	return answer{send: send * ms, end: (send + 1) * ms, kind: kind}
}

// The tolerance's edges, rule by rule: just inside is honest, just outside a lie.
func TestHonestyRuleEdges(t *testing.T) {
	t.Parallel()
	const tol = 1100 // ms: 1 s resolution + 100 ms refill interval
	for _, tc := range []struct {
		name    string
		answers []answer
		kind    string
		lie     bool
		skipped bool // the rule does not judge this case
	}{
		// Retry-After 5 s from a decision in [0, 1] ms: the earliest allowed moment is 5000 ms.
		{"early allow inside", []answer{retryAnswer(0, 5), plain(5000-tol-1, obsAllowed)}, LieRetryEarlyAllow, false, false},
		{"early allow outside", []answer{retryAnswer(0, 5), plain(5000-tol-2, obsAllowed)}, LieRetryEarlyAllow, true, false},
		// The latest moment is 5001 ms: a denial sent after 5001 + tol lies.
		{"late deny inside", []answer{retryAnswer(0, 5), plain(5001+tol, obsDenied)}, LieRetryLateDeny, false, false},
		{"late deny outside", []answer{retryAnswer(0, 5), plain(5001+tol+1, obsDenied)}, LieRetryLateDeny, true, false},
		{"late deny after an allowed request", []answer{retryAnswer(0, 5), plain(6000, obsAllowed), plain(9000, obsDenied)}, LieRetryLateDeny, false, true},
		{"late deny after an unknown outcome", []answer{retryAnswer(0, 5), plain(6000, obsUnknown), plain(9000, obsDenied)}, LieRetryLateDeny, false, true},
		// Remaining 2, then one allowed and a denial: a token was still there.
		{"remaining overstated", []answer{{send: 0, end: ms, kind: obsAllowed, flags: claimRemaining, rem: 2}, plain(10, obsAllowed), plain(20, obsDenied)}, LieRemainingDeny, true, false},
		{"remaining spent", []answer{{send: 0, end: ms, kind: obsAllowed, flags: claimRemaining, rem: 2}, plain(10, obsAllowed), plain(15, obsAllowed), plain(20, obsDenied)}, LieRemainingDeny, false, false},
		// A concurrent request (sent before A's answer) may have taken the token.
		{"remaining, concurrent taker", []answer{{send: 0, end: 5 * ms, kind: obsAllowed, flags: claimRemaining, rem: 1}, {send: 2 * ms, end: 3 * ms, kind: obsAllowed}, plain(20, obsDenied)}, LieRemainingDeny, false, false},
		// Remaining 0 at 10/s, then allowed answers up to B: room for 0 + floor(10 x (B's answer
		// - A's send + 0.1 s)) + 1. 11 by 1011 ms: room 12. 13 by 971 ms: room 11.
		{"exhausted inside", append([]answer{{send: 0, end: ms, kind: obsDenied, flags: claimRemaining}}, allowedRun(11, 10, 100)...), LieRemainingAllow, false, false},
		{"exhausted outside", append([]answer{{send: 0, end: ms, kind: obsDenied, flags: claimRemaining}}, allowedRun(13, 10, 80)...), LieRemainingAllow, true, false},
		{"reset backwards inside", []answer{resetAnswer(0, 10), resetAnswer(100, 9)}, LieResetBackwards, false, false},
		{"reset backwards outside", []answer{resetAnswer(0, 10), resetAnswer(100, 8)}, LieResetBackwards, true, false},
		{"remaining above limit", []answer{{send: 0, end: ms, kind: obsAllowed, flags: claimRemaining | claimLimit, rem: 11, lim: 10}}, LieRemainingAboveLimit, true, false},
	} {
		lies, checked := judgeAnswers(t, tc.answers)
		if tc.skipped {
			if checked[tc.kind] != 0 || lies[tc.kind] != 0 {
				t.Errorf("%s: %s checked %d, lies %d; want not judged", tc.name, tc.kind, checked[tc.kind], lies[tc.kind])
			}
			continue
		}
		if checked[tc.kind] == 0 {
			t.Errorf("%s: %s not checked (%v)", tc.name, tc.kind, checked)
			continue
		}
		if have := lies[tc.kind] > 0; have != tc.lie {
			t.Errorf("%s: %s lie %v, want %v (lies %v)", tc.name, tc.kind, have, tc.lie, lies)
		}
	}
}

// allowedRun is n allowed answers, the first sent at from ms, every step ms.
func allowedRun(n int, from, step int64) []answer {
	out := make([]answer, n)
	for i := range out {
		out[i] = plain(from+int64(i)*step, obsAllowed)
	}
	return out
}

// resetAnswer is an allowed answer sent at send ms saying its reset is secs away.
func resetAnswer(send, secs int64) answer {
	a := answer{send: send * ms, end: (send + 1) * ms, kind: obsAllowed, flags: claimReset}
	a.resetLo, a.resetHi = a.send+secs*1e9, a.end+secs*1e9
	return a
}
