package gateway

import (
	dto "github.com/prometheus/client_model/go"
)

// testCount reads ratelab_gateway_decisions_total{endpoint, outcome} from the registry; 0 when
// the series does not exist (it is not created by looking).
func testCount(m *Metrics, endpoint string, outcome int) float64 {
	fams, err := m.reg.Gather()
	if err != nil {
		panic(err)
	}
	for _, f := range fams {
		if f.GetName() != "ratelab_gateway_decisions_total" {
			continue
		}
		for _, mt := range f.GetMetric() {
			if label(mt, "endpoint") == endpoint && label(mt, "outcome") == outcomeNames[outcome] {
				return mt.GetCounter().GetValue()
			}
		}
	}
	return 0
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}
