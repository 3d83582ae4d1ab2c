package clustertest

import (
	"math"
	"strings"
	"testing"
)

func TestVerdict(t *testing.T) {
	nan := math.NaN()
	for _, tc := range []struct {
		name     string
		lagMs    float64
		runs     int
		load     float64
		starved  bool
		mentions string
	}{
		{"quiet machine", 0.4, 2, 1.1, false, "schedule lag p99 0.40 ms in the worst of 2 run(s)"},
		{"lagging run", 23.5, 1, 1.1, true, "schedule lag p99 23.50 ms"},
		{"lag at the limit is not starved", 10, 1, 4, false, "up to 4.00 (starved above 4 = 2 x 2 cores)"},
		{"loaded machine", 0.4, 1, 4.01, true, "up to 4.01"},
		{"no run, quiet", nan, 0, 0.5, false, "no run finished"},
		{"no run, loaded", nan, 0, 9, true, "no run finished"},
		{"load unknown", 0.4, 1, nan, false, "load average unknown"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := verdict(tc.lagMs, tc.runs, tc.load, 2)
			if strings.Contains(got, "\n") {
				t.Errorf("verdict spans lines: %q", got)
			}
			if s := strings.HasPrefix(got, "VERDICT: the machine was starved"); s != tc.starved {
				t.Errorf("verdict %q: starved %v, want %v", got, s, tc.starved)
			}
			if !tc.starved && !strings.HasPrefix(got, "VERDICT: the product misbehaved") {
				t.Errorf("verdict %q: want it to blame the product", got)
			}
			if !strings.Contains(got, tc.mentions) {
				t.Errorf("verdict %q: want it to say %q", got, tc.mentions)
			}
		})
	}
}

// RecordLag keeps the worst run's lag and counts the runs, whichever order they come in.
func TestRecordLagKeepsTheWorst(t *testing.T) {
	for _, ms := range []float64{3, 12.5, 0.2} {
		RecordLag(t, ms)
	}
	v, ok := watched.Load(t)
	if !ok {
		t.Fatal("RecordLag did not watch the test")
	}
	m := v.(*machine)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.lagMs != 12.5 || m.runs != 3 {
		t.Errorf("lag %.1f ms over %d runs, want 12.5 over 3", m.lagMs, m.runs)
	}
}
