package report

import (
	"fmt"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"ratelab/results"
)

// nodesChart draws each Redis node's share of the run's Redis operations as a bar, with the even
// share (100% / primaries) as a dashed line: a hot tenant's node stands out above it. Nodes that
// answered nothing (replicas, a killed primary) keep their place with a zero bar. A run without
// Redis gets an empty frame titled "(no Redis nodes)".
func nodesChart(s *results.Summary) (*chart, error) {
	title := "Load share per Redis node (% of Redis ops)"
	nodes := s.Nodes
	if len(nodes) == 0 {
		title += " (no Redis nodes)"
	}
	// Addresses on one host are told apart by their ports: full addresses overlap under the bars.
	xLabel, label := "node", func(addr string) string { return addr }
	if host, ok := commonHost(nodes); ok {
		xLabel, label = "node (port on "+strings.TrimSuffix(host, ":")+")", func(addr string) string { return addr[len(host):] }
	}
	p := newPlot(title, xLabel, "share of ops (%)")
	hot := ""
	if len(s.HotKeys) > 0 {
		hot = s.HotKeys[0].Node
	}
	vals := make(plotter.Values, len(nodes))
	names := make([]string, len(nodes))
	top := 0.0
	for i, n := range nodes {
		vals[i] = 100 * n.Share
		top = max(top, vals[i])
		names[i] = label(n.Addr)
		if n.Addr == hot {
			names[i] += "\n(hottest key)"
		}
	}
	if len(nodes) > 0 {
		bars, err := plotter.NewBarChart(vals, vg.Points(max(12, 360/float64(len(nodes)))))
		if err != nil {
			return nil, fmt.Errorf("nodes chart: %w", err)
		}
		bars.Color = palette[seriesNodeShare]
		bars.LineStyle.Width = 0
		p.Add(bars)
		p.Legend.Add(seriesNodeShare, bars)
		p.NominalX(names...)
	}
	caption := "Each Redis node's share of the run's Redis operations (every command its client sent: decisions and the others), " +
		"counted by a hook on its client."
	if prim := s.Environment.Primaries; prim > 0 && len(nodes) > 0 {
		even := 100 / float64(prim)
		top = max(top, even)
		l, err := plotter.NewLine(plotter.XYs{{X: -0.5, Y: even}, {X: float64(len(nodes)) - 0.5, Y: even}})
		if err != nil {
			return nil, fmt.Errorf("nodes chart: %w", err)
		}
		l.LineStyle = lineStyle(seriesEvenShare)
		p.Add(l)
		p.Legend.Add(seriesEvenShare, l)
		caption += fmt.Sprintf(" The dashed line is the even share, 100%% / %d primaries; a node far above it carries hot keys.", prim)
	}
	if hot != "" {
		caption += " The node marked (hottest key) served the run's hottest key (see Hot keys)."
	}
	p.Y.Min, p.Y.Max = 0, max(top*1.1, 1)
	if len(nodes) == 0 {
		p.X.Min, p.X.Max = 0, 1
		p.X.Tick.Marker = plot.ConstantTicks{}
	}
	return &chart{name: NodesChart, caption: caption, plot: p}, nil
}

// commonHost returns "host:" when every node's address is on that one host.
func commonHost(nodes []results.NodeStats) (string, bool) {
	host := ""
	for _, n := range nodes {
		i := strings.LastIndexByte(n.Addr, ':')
		if i < 0 || (host != "" && n.Addr[:i+1] != host) {
			return "", false
		}
		host = n.Addr[:i+1]
	}
	return host, host != ""
}
