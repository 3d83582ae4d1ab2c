package results

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// SchemaHistogram is the schema of latency.hdr.json.
const SchemaHistogram = "ratelab.hdr/v1"

// maxHistogramBytes bounds how much ReadHistogram reads; an encoded histogram is a few KB.
const maxHistogramBytes = 16 << 20

// histogramFile is the JSON envelope of latency.hdr.json. The histogram itself is HdrHistogram's
// V2 compressed encoding (zlib, base64), which every HdrHistogram implementation decodes, so the
// file can also be fed to the usual HdrHistogram tools.
type histogramFile struct {
	Schema            string `json:"schema"`
	Unit              string `json:"unit"`
	Lowest            int64  `json:"lowest"`
	Highest           int64  `json:"highest"`
	SignificantDigits int    `json:"significant_digits"`
	Count             int64  `json:"count"`
	Clamped           int64  `json:"clamped"`
	Encoding          string `json:"encoding"`
	Histogram         string `json:"histogram"`
}

const (
	histogramUnit     = "us"
	histogramEncoding = "hdrhistogram-v2-compressed-base64"
)

// WriteTo writes h as a JSON document (the latency.hdr.json form) to w. It implements
// io.WriterTo.
func (h *Histogram) WriteTo(w io.Writer) (int64, error) {
	enc, err := h.h.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
	if err != nil {
		return 0, fmt.Errorf("encode histogram: %w", err)
	}
	data, err := json.MarshalIndent(histogramFile{
		Schema:            SchemaHistogram,
		Unit:              histogramUnit,
		Lowest:            LowestLatencyUs,
		Highest:           maxLatencyUs,
		SignificantDigits: SignificantDigits,
		Count:             h.Count(),
		Clamped:           h.clamped,
		Encoding:          histogramEncoding,
		Histogram:         string(enc),
	}, "", "  ")
	if err != nil {
		return 0, fmt.Errorf("encode histogram: %w", err)
	}
	n, err := w.Write(append(data, '\n'))
	return int64(n), err
}

// ReadHistogram reads a histogram written by WriteTo. It rejects another schema (ErrSchema), and a
// histogram whose geometry or count differs from what the envelope declares (ErrCorrupt).
func ReadHistogram(r io.Reader) (*Histogram, error) {
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(io.LimitReader(r, maxHistogramBytes)); err != nil {
		return nil, fmt.Errorf("read histogram: %w", err)
	}
	var f histogramFile
	if err := json.Unmarshal(buf.Bytes(), &f); err != nil {
		return nil, fmt.Errorf("read histogram: not a JSON object: %v: %w", err, ErrCorrupt)
	}
	if f.Schema != SchemaHistogram {
		return nil, fmt.Errorf("read histogram: schema %q; this ratelab reads %q only: %w",
			f.Schema, SchemaHistogram, ErrSchema)
	}
	if f.Unit != histogramUnit || f.Encoding != histogramEncoding {
		return nil, fmt.Errorf("read histogram: unit %q encoding %q; want %q and %q: %w",
			f.Unit, f.Encoding, histogramUnit, histogramEncoding, ErrCorrupt)
	}
	if f.Lowest != LowestLatencyUs || f.Highest != maxLatencyUs || f.SignificantDigits != SignificantDigits {
		return nil, fmt.Errorf("read histogram: geometry lowest=%d highest=%d digits=%d; want %d, %d, %d: %w",
			f.Lowest, f.Highest, f.SignificantDigits, LowestLatencyUs, maxLatencyUs, SignificantDigits, ErrCorrupt)
	}
	hh, err := hdrhistogram.Decode([]byte(f.Histogram))
	if err != nil {
		return nil, fmt.Errorf("read histogram: field histogram: %v: %w", err, ErrCorrupt)
	}
	if hh.LowestTrackableValue() != LowestLatencyUs || hh.HighestTrackableValue() != maxLatencyUs ||
		hh.SignificantFigures() != SignificantDigits {
		return nil, fmt.Errorf("read histogram: encoded geometry lowest=%d highest=%d digits=%d differs "+
			"from the envelope's: %w", hh.LowestTrackableValue(), hh.HighestTrackableValue(),
			hh.SignificantFigures(), ErrCorrupt)
	}
	if hh.TotalCount() != f.Count {
		return nil, fmt.Errorf("read histogram: encoded count %d, envelope says %d: %w",
			hh.TotalCount(), f.Count, ErrCorrupt)
	}
	return &Histogram{h: hh, clamped: f.Clamped}, nil
}

// percentilesValueScale divides the Histogram's microseconds into the milliseconds
// latency.hgrm prints.
const percentilesValueScale = 1000

// WritePercentiles writes h's percentile distribution to w in HdrHistogram's .hgrm text form
// (latency.hgrm), with hdrhistogram-go's PercentilesPrint: values in milliseconds, the points
// as dense toward the tail as Percentiles', then the #[Mean ...], #[Max ...] and #[Buckets ...]
// footer. Two comment lines follow it: the unit, and c (h holds the served requests only; the
// drops are beside it). HdrHistogram's plotter and hdr-plot read the file as it is.
func (h *Histogram) WritePercentiles(w io.Writer, c RequestCounts) error {
	var buf bytes.Buffer
	if _, err := h.h.PercentilesPrint(&buf, percentileTicks, percentilesValueScale); err != nil {
		return fmt.Errorf("%s: %w", PercentilesFile, err)
	}
	fmt.Fprintf(&buf, "#[ratelab: Value in ms, recorded in microseconds (value scale %d); %d latencies above %d ms recorded as %d ms]\n",
		percentilesValueScale, h.clamped, MaxLatency.Milliseconds(), MaxLatency.Milliseconds())
	fmt.Fprintf(&buf, "#[ratelab: served requests only: %s; latency over offered requests (drops slower than any latency) is summary.json's latency_ms]\n", c)
	if _, err := w.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("%s: %w", PercentilesFile, err)
	}
	return nil
}
