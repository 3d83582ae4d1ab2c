package limiter_test

import (
	"errors"
	"math"
	"testing"
	"time"

	"ratelab/limiter"
)

func TestDecodeReply(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		have any
		want limiter.Decision
	}{
		{"allowed", []any{int64(1), int64(9), int64(0), int64(2)}, limiter.Decision{Allowed: true, Remaining: 9, ResetAfter: 2 * time.Millisecond}},
		{"denied", []any{int64(0), int64(0), int64(100), int64(500)}, limiter.Decision{RetryAfter: 100 * time.Millisecond, ResetAfter: 500 * time.Millisecond}},
		{"denied forever", []any{int64(0), int64(10), int64(-1), int64(0)}, limiter.Decision{Remaining: 10, RetryAfter: limiter.RetryNever}},
	}
	for _, tt := range tests {
		if have, err := limiter.DecodeReply(tt.have); err != nil || have != tt.want {
			t.Errorf("%s: DecodeReply(%v) = %+v, %v; want %+v", tt.name, tt.have, have, err, tt.want)
		}
	}
}

// TestDecodeTimedReply: the Redis clock's reply carries now_ms, which becomes At (a whole
// millisecond); the four decision integers are checked as decodeReply checks them.
func TestDecodeTimedReply(t *testing.T) {
	t.Parallel()
	const now = int64(1_700_000_000_123)
	at := time.UnixMilli(now)
	tests := []struct {
		name string
		have any
		want limiter.Decision
	}{
		{"allowed", []any{int64(1), int64(9), int64(0), int64(2), now}, limiter.Decision{Allowed: true, Remaining: 9, ResetAfter: 2 * time.Millisecond, At: at}},
		{"denied", []any{int64(0), int64(0), int64(100), int64(500), now}, limiter.Decision{RetryAfter: 100 * time.Millisecond, ResetAfter: 500 * time.Millisecond, At: at}},
		{"first millisecond", []any{int64(0), int64(10), int64(-1), int64(0), int64(1)}, limiter.Decision{Remaining: 10, RetryAfter: limiter.RetryNever, At: time.UnixMilli(1)}},
		{"last exact millisecond", []any{int64(1), int64(0), int64(0), int64(0), int64(1 << 53)}, limiter.Decision{Allowed: true, At: time.UnixMilli(1 << 53)}},
	}
	for _, tt := range tests {
		if have, err := limiter.DecodeTimedReply(tt.have); err != nil || have != tt.want {
			t.Errorf("%s: DecodeTimedReply(%v) = %+v, %v; want %+v", tt.name, tt.have, have, err, tt.want)
		}
	}
	for _, tt := range []struct {
		name string
		have any
	}{
		{"four elements (the gateway clock's reply)", []any{int64(1), int64(9), int64(0), int64(2)}},
		{"six elements", []any{int64(1), int64(9), int64(0), int64(2), now, now}},
		{"not an array", now},
		{"now_ms 0", []any{int64(1), int64(9), int64(0), int64(2), int64(0)}},
		{"negative now_ms", []any{int64(1), int64(9), int64(0), int64(2), int64(-5)}},
		{"now_ms beyond 2^53", []any{int64(1), int64(9), int64(0), int64(2), int64(1<<53 + 1)}},
		{"now_ms a string", []any{int64(1), int64(9), int64(0), int64(2), "1700000000123"}},
		{"now_ms a float", []any{int64(1), int64(9), int64(0), int64(2), 1.7e12}},
		{"bad decision with a good time", []any{int64(1), int64(9), int64(5), int64(2), now}},
	} {
		if d, err := limiter.DecodeTimedReply(tt.have); !errors.Is(err, limiter.ErrBadReply) {
			t.Errorf("%s: DecodeTimedReply(%#v) = %+v, %v; want an error wrapping ErrBadReply", tt.name, tt.have, d, err)
		}
	}
}

func TestDecodeReplyBadShapes(t *testing.T) {
	t.Parallel()
	big := int64(math.MaxInt64)
	for _, tt := range []struct {
		name string
		have any
	}{
		{"nil", nil},
		{"integer", int64(1)},
		{"string", "OK"},
		{"int64 slice", []int64{1, 9, 0, 2}},
		{"empty array", []any{}},
		{"three elements", []any{int64(1), int64(9), int64(0)}},
		{"five elements", []any{int64(1), int64(9), int64(0), int64(2), int64(0)}},
		{"string element", []any{int64(1), "9", int64(0), int64(2)}},
		{"nil element", []any{int64(1), nil, int64(0), int64(2)}},
		{"float element", []any{int64(1), int64(9), 0.5, int64(2)}},
		{"nested array", []any{[]any{int64(1)}, int64(9), int64(0), int64(2)}},
		{"allowed is 2", []any{int64(2), int64(9), int64(0), int64(2)}},
		{"allowed is -1", []any{int64(-1), int64(9), int64(0), int64(2)}},
		{"negative remaining", []any{int64(1), int64(-1), int64(0), int64(2)}},
		{"allowed with retry", []any{int64(1), int64(9), int64(5), int64(2)}},
		{"denied with zero retry", []any{int64(0), int64(0), int64(0), int64(2)}},
		{"denied with retry -2", []any{int64(0), int64(0), int64(-2), int64(2)}},
		{"negative reset", []any{int64(1), int64(9), int64(0), int64(-1)}},
		{"retry overflowing a Duration", []any{int64(0), int64(0), big, int64(2)}},
		{"reset overflowing a Duration", []any{int64(1), int64(0), int64(0), big}},
	} {
		if d, err := limiter.DecodeReply(tt.have); !errors.Is(err, limiter.ErrBadReply) {
			t.Errorf("%s: DecodeReply(%#v) = %+v, %v; want an error wrapping ErrBadReply", tt.name, tt.have, d, err)
		}
	}
}

// FuzzDecodeReply builds replies of many shapes from fuzzed values and decodes each with both
// decoders, the gateway clock's (4 integers) and the Redis clock's (5, the last now_ms): neither
// may panic, each must either fail with ErrBadReply or return a Decision that keeps the script's
// contract, and no reply is good for both.
func FuzzDecodeReply(f *testing.F) {
	f.Add(uint8(4), uint8(0), int64(1), int64(9), int64(0), int64(2))
	f.Add(uint8(4), uint8(0), int64(0), int64(0), int64(-1), int64(0))
	f.Add(uint8(4), uint8(0b0100), int64(0), int64(0), int64(7), int64(9))
	f.Add(uint8(3), uint8(0), int64(1), int64(1), int64(1), int64(1))
	f.Add(uint8(4), uint8(0xff), int64(math.MaxInt64), int64(math.MinInt64), int64(-1), int64(0))
	// Five elements: the fifth (now_ms) is b ^ d.
	f.Add(uint8(5), uint8(0), int64(1), int64(9), int64(0), int64(2))
	f.Add(uint8(5), uint8(0), int64(0), int64(1_700_000_000_000^3), int64(4), int64(3))
	f.Add(uint8(5), uint8(0), int64(1), int64(1<<53^2), int64(0), int64(2))
	f.Fuzz(func(t *testing.T, n, kinds uint8, a, b, c, d int64) {
		vals := [5]int64{a, b, c, d, b ^ d}
		var reply any
		switch n % 8 {
		case 6:
			reply = a // not an array
		case 7:
			reply = nil
		default:
			arr := make([]any, int(n%8)) // 0..5 elements
			for i := range arr {
				v := vals[i]
				switch (kinds >> (2 * (i % 4))) & 3 { // each element's type from two bits
				case 0:
					arr[i] = v
				case 1:
					arr[i] = float64(v)
				case 2:
					arr[i] = "x"
				case 3:
					arr[i] = nil
				}
			}
			reply = arr
		}
		plain, errPlain := limiter.DecodeReply(reply)
		timed, errTimed := limiter.DecodeTimedReply(reply)
		if errPlain == nil && errTimed == nil {
			t.Fatalf("%#v decodes as both replies: %+v and %+v", reply, plain, timed)
		}
		for _, dec := range []struct {
			name string
			d    limiter.Decision
			err  error
		}{{"DecodeReply", plain, errPlain}, {"DecodeTimedReply", timed, errTimed}} {
			if dec.err != nil {
				if !errors.Is(dec.err, limiter.ErrBadReply) {
					t.Fatalf("%s(%#v): error %v does not wrap ErrBadReply", dec.name, reply, dec.err)
				}
				continue
			}
			checkDecoded(t, dec.name, reply, dec.d)
		}
		if errTimed == nil {
			if ms := timed.At.UnixMilli(); ms < 1 || ms > 1<<53 || !timed.At.Equal(time.UnixMilli(ms)) {
				t.Fatalf("DecodeTimedReply(%#v) = %+v: At is not a whole millisecond in 1..2^53", reply, timed)
			}
		} else if errPlain == nil && !plain.At.IsZero() {
			t.Fatalf("DecodeReply(%#v) = %+v: At set from a reply that has no time", reply, plain)
		}
	})
}

// checkDecoded fails t when d, decoded from reply by the named decoder, breaks the script's
// contract.
func checkDecoded(t *testing.T, name string, reply any, d limiter.Decision) {
	t.Helper()
	switch {
	case d.Remaining < 0, d.ResetAfter < 0:
		t.Fatalf("%s(%#v) = %+v: negative remaining or reset", name, reply, d)
	case d.Allowed && d.RetryAfter != 0:
		t.Fatalf("%s(%#v) = %+v: allowed with a retry", name, reply, d)
	case !d.Allowed && d.RetryAfter != limiter.RetryNever && d.RetryAfter < time.Millisecond:
		t.Fatalf("%s(%#v) = %+v: denied without a retry", name, reply, d)
	}
}
