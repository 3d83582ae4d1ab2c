package demo

import (
	"testing"

	"ratelab/results"
)

func TestRegionsFacts(t *testing.T) {
	s := &results.Summary{Regions: &results.Regions{CrossRegionCallsPerS: 812.4, List: []results.Region{
		{Name: "us", P99Ms: 3, Allowed: 900, Denied: 100, FalseDenies: 10, Overspend: 9},
		{Name: "eu", P99Ms: 64.5, Allowed: 100, Denied: 300, FalseDenies: 30},
	}}}
	for _, c := range []struct{ got, want string }{
		{worstRegionP99(s), "64.500 ms (eu)"},
		{regionsRatio(s, falseDenies), "10.00% (40)"},
		{regionsRatio(s, overspent), "0.90% (9)"},
		{crossRegion(s), "812"},
		{worstRegionP99(&results.Summary{}), "no regions recorded"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}
