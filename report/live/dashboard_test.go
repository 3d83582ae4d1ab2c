package live_test

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"

	"ratelab/report/live"
)

// TestDashboardNamesLiveMetrics checks the Grafana dashboard without a Prometheus: every metric
// its queries name is one this package serves, and every selector of a panel picks the run by
// the scenario and run_id variables.
func TestDashboardNamesLiveMetrics(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var dash any
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	served := map[string]bool{}
	for _, n := range []string{live.MetricRunInfo, live.MetricOffered, live.MetricSent, live.MetricDropped,
		live.MetricDecisions, live.MetricLate, live.MetricRedisErrors, live.MetricOverspend, live.MetricFalseDenies,
		live.MetricCentralOps, live.MetricLatency, live.MetricOfferedRate, live.MetricAchievedRate,
		live.MetricInFlight, live.MetricFaultActive, live.MetricFinished, live.MetricRowLatency} {
		served[n] = true
	}
	selector := regexp.MustCompile(`(ratelab_[a-z_]+)(\{[^}]*\})?`)
	for _, e := range collectExprs(dash, nil) {
		for _, m := range selector.FindAllStringSubmatch(e, -1) {
			name := m[1]
			base := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(name, "_bucket"), "_count"), "_sum")
			if !served[name] && !(base == live.MetricLatency) {
				t.Errorf("query %q names %s, which report/live does not serve", e, name)
			}
			if strings.HasPrefix(e, "label_values(") {
				continue
			}
			if !strings.Contains(m[2], `scenario="$scenario"`) || !strings.Contains(m[2], `run_id="$run_id"`) {
				t.Errorf("query %q: selector %s does not pick the run (scenario=\"$scenario\", run_id=\"$run_id\")", e, m[0])
			}
		}
	}
}
