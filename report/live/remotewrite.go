package live

import (
	"math"
	"sort"
	"strconv"

	"github.com/klauspost/compress/snappy"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/encoding/protowire"
)

// The remote-write request is encoded here with protowire, field by field, rather than with
// github.com/prometheus/prometheus/prompb: that package's module is all of Prometheus (its
// storage, PromQL and service discovery with their dependencies) for three small messages.
// The messages, from prompb/remote.proto and types.proto (remote write 1.0):
//
//	WriteRequest { repeated TimeSeries timeseries = 1; }
//	TimeSeries   { repeated Label labels = 1; repeated Sample samples = 2; }
//	Label        { string name = 1; string value = 2; }
//	Sample       { double value = 1; int64 timestamp = 2; }  // timestamp in ms
//
// The body is snappy's block format (not its framed stream), as the protocol requires. A
// histogram goes as its classic series (_bucket with le, _sum, _count), as the text exposition
// writes it; its native buckets are for scrapes only.

// series is one time series of a push: its labels (sorted by name, __name__ among them) and its
// one sample.
type series struct {
	labels [][2]string
	value  float64
}

// encodeWriteRequest returns the snappy-compressed WriteRequest of every sample of fams, all at
// timestamp ms.
func encodeWriteRequest(fams []*dto.MetricFamily, ms int64) []byte {
	var buf []byte
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			for _, s := range flatten(f, m) {
				buf = protowire.AppendTag(buf, 1, protowire.BytesType)
				buf = protowire.AppendBytes(buf, s.encode(ms))
			}
		}
	}
	return snappy.Encode(nil, buf)
}

func (s series) encode(ms int64) []byte {
	var b []byte
	for _, l := range s.labels {
		var lb []byte
		lb = protowire.AppendTag(lb, 1, protowire.BytesType)
		lb = protowire.AppendString(lb, l[0])
		lb = protowire.AppendTag(lb, 2, protowire.BytesType)
		lb = protowire.AppendString(lb, l[1])
		b = protowire.AppendTag(b, 1, protowire.BytesType)
		b = protowire.AppendBytes(b, lb)
	}
	var sb []byte
	sb = protowire.AppendTag(sb, 1, protowire.Fixed64Type)
	sb = protowire.AppendFixed64(sb, math.Float64bits(s.value))
	sb = protowire.AppendTag(sb, 2, protowire.VarintType)
	sb = protowire.AppendVarint(sb, uint64(ms))
	b = protowire.AppendTag(b, 2, protowire.BytesType)
	return protowire.AppendBytes(b, sb)
}

// flatten returns the series of one metric as the text exposition names them.
func flatten(f *dto.MetricFamily, m *dto.Metric) []series {
	name := f.GetName()
	one := func(suffix string, v float64, extra ...string) series {
		ls := [][2]string{{"__name__", name + suffix}}
		for _, l := range m.GetLabel() {
			ls = append(ls, [2]string{l.GetName(), l.GetValue()})
		}
		if len(extra) == 2 {
			ls = append(ls, [2]string{extra[0], extra[1]})
		}
		sort.Slice(ls, func(i, j int) bool { return ls[i][0] < ls[j][0] })
		return series{labels: ls, value: v}
	}
	switch f.GetType() {
	case dto.MetricType_COUNTER:
		return []series{one("", m.GetCounter().GetValue())}
	case dto.MetricType_GAUGE:
		return []series{one("", m.GetGauge().GetValue())}
	case dto.MetricType_HISTOGRAM:
		h := m.GetHistogram()
		out := make([]series, 0, len(h.GetBucket())+3)
		for _, b := range h.GetBucket() {
			if !math.IsInf(b.GetUpperBound(), 1) {
				out = append(out, one("_bucket", float64(b.GetCumulativeCount()), "le", formatLe(b.GetUpperBound())))
			}
		}
		return append(out,
			one("_bucket", float64(h.GetSampleCount()), "le", "+Inf"),
			one("_sum", h.GetSampleSum()),
			one("_count", float64(h.GetSampleCount())))
	case dto.MetricType_SUMMARY:
		s := m.GetSummary()
		out := make([]series, 0, len(s.GetQuantile())+2)
		for _, q := range s.GetQuantile() {
			out = append(out, one("", q.GetValue(), "quantile", formatLe(q.GetQuantile())))
		}
		return append(out, one("_sum", s.GetSampleSum()), one("_count", float64(s.GetSampleCount())))
	default:
		return []series{one("", m.GetUntyped().GetValue())}
	}
}

// formatLe writes a bucket bound as the text exposition does, so pushed and scraped series of
// one bucket carry the same le.
func formatLe(v float64) string {
	if math.IsInf(v, 1) {
		return "+Inf"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}
