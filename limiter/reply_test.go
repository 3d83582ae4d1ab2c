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

// FuzzDecodeReply builds replies of many shapes from fuzzed values: decoding must never panic,
// and must either fail with ErrBadReply or return a Decision that keeps the script's contract.
func FuzzDecodeReply(f *testing.F) {
	f.Add(uint8(4), uint8(0), int64(1), int64(9), int64(0), int64(2))
	f.Add(uint8(4), uint8(0), int64(0), int64(0), int64(-1), int64(0))
	f.Add(uint8(4), uint8(0b0100), int64(0), int64(0), int64(7), int64(9))
	f.Add(uint8(3), uint8(0), int64(1), int64(1), int64(1), int64(1))
	f.Add(uint8(4), uint8(0xff), int64(math.MaxInt64), int64(math.MinInt64), int64(-1), int64(0))
	f.Fuzz(func(t *testing.T, n, kinds uint8, a, b, c, d int64) {
		vals := [4]int64{a, b, c, d}
		var reply any
		switch n % 8 {
		case 6:
			reply = a // not an array
		case 7:
			reply = nil
		default:
			arr := make([]any, int(n%8)) // 0..5 elements
			for i := range arr {
				v := vals[i%4]
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
		dec, err := limiter.DecodeReply(reply)
		if err != nil {
			if !errors.Is(err, limiter.ErrBadReply) {
				t.Fatalf("DecodeReply(%#v): error %v does not wrap ErrBadReply", reply, err)
			}
			return
		}
		switch {
		case dec.Remaining < 0, dec.ResetAfter < 0:
			t.Fatalf("DecodeReply(%#v) = %+v: negative remaining or reset", reply, dec)
		case dec.Allowed && dec.RetryAfter != 0:
			t.Fatalf("DecodeReply(%#v) = %+v: allowed with a retry", reply, dec)
		case !dec.Allowed && dec.RetryAfter != limiter.RetryNever && dec.RetryAfter < time.Millisecond:
			t.Fatalf("DecodeReply(%#v) = %+v: denied without a retry", reply, dec)
		}
	})
}
