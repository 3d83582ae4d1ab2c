package attack_test

import (
	"errors"
	"reflect"
	"testing"

	"ratelab/limiter"
	"ratelab/run/attack"
)

func TestParsePolicy(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		have string
		want limiter.BucketPolicy
		err  bool
	}{
		{"rate=50,burst=100", limiter.BucketPolicy{Rate: 50, Burst: 100}, false},
		{" burst=2 , rate=0.5 ", limiter.BucketPolicy{Rate: 0.5, Burst: 2}, false},
		{"rate=50", limiter.BucketPolicy{}, true},
		{"rate=0,burst=1", limiter.BucketPolicy{}, true},
		{"rate=1,burst=0", limiter.BucketPolicy{}, true},
		{"rate=1,burst=1,window=1s", limiter.BucketPolicy{}, true},
		{"50/100", limiter.BucketPolicy{}, true},
	} {
		have, err := attack.ParsePolicy(tc.have)
		if tc.err {
			if !errors.Is(err, attack.ErrInvalid) {
				t.Errorf("ParsePolicy(%q) = %v, %v; want ErrInvalid", tc.have, have, err)
			}
			continue
		}
		if err != nil || have != tc.want {
			t.Errorf("ParsePolicy(%q) = %v, %v; want %v", tc.have, have, err, tc.want)
		}
	}
}

func TestParseEndpoints(t *testing.T) {
	t.Parallel()
	names, weights, err := attack.ParseEndpoints("search:3,read, write:0.5")
	if err != nil || !reflect.DeepEqual(names, []string{"search", "read", "write"}) || !reflect.DeepEqual(weights, []float64{3, 1, 0.5}) {
		t.Errorf("got %v %v %v", names, weights, err)
	}
	for _, bad := range []string{"", "a,,b", "a:x", "a:-1"} {
		if _, _, err := attack.ParseEndpoints(bad); !errors.Is(err, attack.ErrInvalid) {
			t.Errorf("ParseEndpoints(%q) = %v, want ErrInvalid", bad, err)
		}
	}
}
