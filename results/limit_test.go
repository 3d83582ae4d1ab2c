package results

import "testing"

func TestJudgeLimit(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		load Load
		late int64
		want Limit
	}{
		{"kept up", Load{Offered: 1000, Completed: 1000, ScheduleLagP99Ms: 0.3}, 0, LimitNone},
		{"within the tolerance", Load{Offered: 1000, Completed: 995, DroppedInflight: 5}, 0, LimitNone},
		{"slow limiter: drops at max_inflight, no lag", Load{Offered: 1000, Completed: 300, Dropped: 700, DroppedInflight: 700, ScheduleLagP99Ms: 0.2}, 0, LimitLimiter},
		{"slow limiter: answers after the window", Load{Offered: 1000, Completed: 1000, ScheduleLagP99Ms: 0.2}, 500, LimitLimiter},
		{"generator: drops behind schedule", Load{Offered: 1000, Completed: 999, Dropped: 1, DroppedBehind: 1}, 0, LimitGenerator},
		{"generator: lag beyond the threshold, nothing dropped", Load{Offered: 1000, Completed: 1000, ScheduleLagP99Ms: GeneratorLagMs + 0.1}, 0, LimitGenerator},
		{"generator wins over a slow limiter", Load{Offered: 1000, Completed: 300, Dropped: 700, DroppedInflight: 600, DroppedBehind: 100}, 0, LimitGenerator},
		{"lag at the threshold is not beyond it", Load{Offered: 1000, Completed: 1000, ScheduleLagP99Ms: GeneratorLagMs}, 0, LimitNone},
		{"nothing offered", Load{}, 0, LimitNone},
	} {
		l := tc.load
		l.JudgeLimit(tc.late)
		if l.Limit != tc.want || l.GeneratorLimited != (tc.want == LimitGenerator) {
			t.Errorf("%s: limit %q generator_limited %v; want %q", tc.name, l.Limit, l.GeneratorLimited, tc.want)
		}
	}
}

// A merged run's limit is the worst of its parts': the generator's, then the limiter's.
func TestMergedLimit(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ a, b, want Limit }{
		{LimitNone, LimitLimiter, LimitLimiter},
		{LimitLimiter, LimitGenerator, LimitGenerator},
		{LimitGenerator, LimitNone, LimitGenerator},
		{"", LimitNone, LimitNone},
		{"", "", ""},
	} {
		a, b := Load{Limit: tc.a}, Load{Limit: tc.b}
		addLoad(&a, &b)
		if a.Limit != tc.want {
			t.Errorf("%q + %q = %q, want %q", tc.a, tc.b, a.Limit, tc.want)
		}
	}
}
