package gateway

import (
	dto "github.com/prometheus/client_model/go"
)

// testCount reads ratelab_gateway_decisions_total{endpoint, outcome} from the registry, summed
// over sources; 0 when no series exists (none is created by looking).
func testCount(m *Metrics, endpoint string, outcome int) float64 {
	fams, err := m.reg.Gather()
	if err != nil {
		panic(err)
	}
	var n float64
	for _, f := range fams {
		if f.GetName() != "ratelab_gateway_decisions_total" {
			continue
		}
		for _, mt := range f.GetMetric() {
			if label(mt, "endpoint") == endpoint && label(mt, "outcome") == outcomeNames[outcome] {
				n += mt.GetCounter().GetValue()
			}
		}
	}
	return n
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}
