package report

import (
	"image/color"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Series names, used as legend labels in every chart.
const (
	seriesOffered = "offered"
	seriesSent    = "sent (achieved)"
	seriesAllowed = "allowed"
	seriesDenied  = "denied"
	seriesDropped = "dropped"
	// seriesDroppedShare is the dropped share of each second's offered requests, in percent.
	seriesDroppedShare = "dropped share"
	seriesP50          = "p50"
	seriesP99          = "p99"
	seriesP999         = "p99.9"
	seriesOverspend    = "overspend"
	seriesBound        = "bound"
	seriesLatency      = "latency"

	seriesFailedOpen   = "failed open"
	seriesFailedClosed = "failed closed"
	seriesErrors       = "errors"
	seriesNodeShare    = "share of Redis ops"
	seriesEvenShare    = "even share"

	seriesMoved       = "MOVED"
	seriesAsk         = "ASK"
	seriesTryAgain    = "TRYAGAIN"
	seriesClusterDown = "CLUSTERDOWN"
	seriesNoScript    = "NOSCRIPT"
	seriesTimeout     = "timeout"
	seriesConn        = "conn"
	seriesOther       = "other"

	// Fault markers: the legend entries of the injection line and of the shaded span to recovery.
	seriesFault    = "fault"
	seriesRecovery = "until recovered"
)

// palette gives every series one colour, the same in every chart (Tableau 10 hues, which stay
// distinguishable for the common colour-vision deficiencies when paired with the dash styles).
var palette = map[string]color.RGBA{
	seriesOffered: {R: 0x7f, G: 0x7f, B: 0x7f, A: 0xff}, // grey
	seriesSent:    {R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}, // blue
	seriesAllowed: {R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff}, // green
	seriesDenied:  {R: 0xff, G: 0x7f, B: 0x0e, A: 0xff}, // orange
	seriesDropped: {R: 0xd6, G: 0x27, B: 0x28, A: 0xff}, // red
	// The same red: the same requests, as a share of the second's offered ones.
	seriesDroppedShare: {R: 0xd6, G: 0x27, B: 0x28, A: 0xff},
	seriesP50:          {R: 0x17, G: 0xbe, B: 0xcf, A: 0xff}, // cyan
	seriesP99:          {R: 0x94, G: 0x67, B: 0xbd, A: 0xff}, // purple
	seriesP999:         {R: 0x8c, G: 0x56, B: 0x4b, A: 0xff}, // brown
	seriesOverspend:    {R: 0xe3, G: 0x77, B: 0xc2, A: 0xff}, // pink
	seriesBound:        {R: 0x00, G: 0x00, B: 0x00, A: 0xff}, // black
	seriesLatency:      {R: 0x39, G: 0x3b, B: 0x79, A: 0xff}, // navy
	// Outcomes of a failing store, and the per-node chart.
	seriesFailedOpen:   {R: 0xbc, G: 0xbd, B: 0x22, A: 0xff}, // olive (the last Tableau 10 hue)
	seriesFailedClosed: {R: 0x80, G: 0x00, B: 0x26, A: 0xff}, // dark red
	seriesErrors:       {R: 0x44, G: 0x44, B: 0x44, A: 0xff}, // near black
	seriesNodeShare:    {R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}, // blue
	seriesEvenShare:    {R: 0x00, G: 0x00, B: 0x00, A: 0xff}, // black, dashed like the bound
	// Redirects and errors: ColorBrewer Dark2, so they differ from the series above.
	seriesMoved:       {R: 0x1b, G: 0x9e, B: 0x77, A: 0xff}, // teal
	seriesAsk:         {R: 0xd9, G: 0x5f, B: 0x02, A: 0xff}, // dark orange
	seriesTryAgain:    {R: 0x75, G: 0x70, B: 0xb3, A: 0xff}, // slate
	seriesClusterDown: {R: 0xe7, G: 0x29, B: 0x8a, A: 0xff}, // magenta
	seriesNoScript:    {R: 0xe6, G: 0xab, B: 0x02, A: 0xff}, // mustard
	seriesTimeout:     {R: 0x66, G: 0xa6, B: 0x1e, A: 0xff}, // olive green
	seriesConn:        {R: 0xa6, G: 0x76, B: 0x1d, A: 0xff}, // ochre
	seriesOther:       {R: 0x66, G: 0x66, B: 0x66, A: 0xff}, // dark grey
	// Fault markers: a dark olive no series uses, dark enough for label text on white (5.3:1).
	seriesFault: {R: 0x70, G: 0x70, B: 0x00, A: 0xff},
}

// faultShade fills the span from a fault's injection to its recovery: the fault colour at 20%
// opacity, light enough for the data drawn over it to keep its own colours.
var faultShade = color.NRGBA{R: 0x70, G: 0x70, B: 0x00, A: 0x33}

// labelBackdrop is drawn behind fault labels: white at 80% opacity, so a label stays readable
// over a line while the line still shows through.
var labelBackdrop = color.NRGBA{R: 0xff, G: 0xff, B: 0xff, A: 0xcc}

// dashes marks the series that are easy to confuse by hue alone.
var dashes = map[string][]vg.Length{
	seriesOffered:      {vg.Points(6), vg.Points(3)},
	seriesP999:         {vg.Points(2), vg.Points(2)},
	seriesBound:        {vg.Points(6), vg.Points(3)},
	seriesFailedClosed: {vg.Points(4), vg.Points(2)},
	seriesErrors:       {vg.Points(1.5), vg.Points(1.5)},
	seriesEvenShare:    {vg.Points(6), vg.Points(3)},
	seriesFault:        {vg.Points(6), vg.Points(2), vg.Points(1.5), vg.Points(2)}, // dash-dot
}

// lineStyle is the style of a series' line.
func lineStyle(series string) draw.LineStyle {
	return draw.LineStyle{Color: palette[series], Width: vg.Points(1.5), Dashes: dashes[series]}
}
