package report

import (
	"encoding/json"
	"errors"
	"fmt"
	htmltemplate "html/template"
	"os"
	"path/filepath"
	"strings"

	"ratelab/results"
)

// Files of a regions sweep's and a durability matrix's directories, beside the charts
// (TradeoffChart, DurabilityChart).
const (
	// RegionsSweepStem names sweep.json, sweep.csv and sweep.md.
	RegionsSweepStem = "sweep"
	// DurabilityStem names durability.json, durability.csv and durability.md.
	DurabilityStem = "durability"
	// TradeoffIndex is the page linking a driver's table, plot and every run's report.
	TradeoffIndex = "index.html"
)

// RegionsSweep is sweep.json.
type RegionsSweep struct {
	Schema string       `json:"schema"`
	Rows   []RegionsRow `json:"rows"`
}

// Durability is durability.json.
type Durability struct {
	Schema string          `json:"schema"`
	Rows   []DurabilityRow `json:"rows"`
}

// WriteRegionsSweep builds the rows of a regions sweep's runs and writes into dir sweep.json,
// sweep.csv, sweep.md, the plot tradeoff.png/.svg and index.html. Every file is written even
// when one fails; the error joins what failed.
func WriteRegionsSweep(dir string, runs []results.StudyRun) ([]RegionsRow, error) {
	rows := RegionsRows(dir, runs)
	csvData, err := regionsCSV(rows)
	errs := []error{err,
		writeJSON(filepath.Join(dir, RegionsSweepStem+".json"), RegionsSweep{Schema: SchemaRegionsSweep, Rows: rows}),
		results.WriteFileAtomic(filepath.Join(dir, RegionsSweepStem+".csv"), csvData),
		results.WriteFileAtomic(filepath.Join(dir, RegionsSweepStem+".md"), []byte(sweepMarkdown(rows))),
	}
	p, err := regionsPlot(rows)
	if err == nil {
		err = savePlot(p, dir, TradeoffChart)
	}
	errs = append(errs, err)
	idx := tradeoffIndex{Title: "Regions sweep", Chart: TradeoffChart, Stem: RegionsSweepStem,
		Header: []string{"design", "overspend ratio", "false-deny ratio", "errors / allowed", "worst p99 ms", "mean p99 ms", "availability", "cross-region calls/s", "note"}}
	for _, r := range rows {
		idx.Rows = append(idx.Rows, indexRow{Label: r.Label, Link: runLink(dir, r.Dir), Cells: []string{fmtPct(r.OverspendRatio), fmtPct(r.FalseDenyRatio),
			fmtPct(r.ErrorsPerAllowed), fmtLatency(r.WorstP99Ms), fmtLatency(r.MeanP99Ms), fmtShare(r.Availability), fmtRate(r.CrossRegionCallsPerS), r.Error}})
	}
	errs = append(errs, writeIndex(dir, idx))
	return rows, errors.Join(errs...)
}

// WriteDurability builds the ranked rows of a durability matrix's runs and writes into dir
// durability.json, durability.csv, durability.md, the plot durability.png/.svg and index.html.
// Every file is written even when one fails; the error joins what failed.
func WriteDurability(dir string, runs []results.StudyRun) ([]DurabilityRow, error) {
	rows := DurabilityRows(dir, runs)
	csvData, err := durabilityCSV(rows)
	errs := []error{err,
		writeJSON(filepath.Join(dir, DurabilityStem+".json"), Durability{Schema: SchemaDurability, Rows: rows}),
		results.WriteFileAtomic(filepath.Join(dir, DurabilityStem+".csv"), csvData),
		results.WriteFileAtomic(filepath.Join(dir, DurabilityStem+".md"), []byte(durabilityMarkdown(rows))),
	}
	p, err := durabilityPlot(rows)
	if err == nil {
		err = savePlot(p, dir, DurabilityChart)
	}
	errs = append(errs, err)
	idx := tradeoffIndex{Title: "Durability", Chart: DurabilityChart, Stem: DurabilityStem,
		Header: []string{"setting", "fault", "rank", "tokens back", "bound", "failed", "dropped", "steady p50 / p99 ms", "availability in the fault window", "note"}}
	for _, r := range rows {
		rank := "—"
		if r.Rank > 0 {
			rank = fmt.Sprint(r.Rank)
		}
		idx.Rows = append(idx.Rows, indexRow{Label: r.Setting, Link: runLink(dir, r.Dir), Cells: []string{r.Fault, rank, fmtTokensBack(r.TokensBack),
			strings.ReplaceAll(fmtTokensBound(r.TokensBack), "**", ""), fmtInt(r.Failed), fmtInt(r.Dropped),
			fmtLatency(r.SteadyP50Ms) + " / " + fmtLatency(r.SteadyP99Ms), fmtOptShare(r.FaultAvailability), r.Error}})
	}
	errs = append(errs, writeIndex(dir, idx))
	return rows, errors.Join(errs...)
}

// writeJSON writes v as indented JSON, atomically.
func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding %s: %w", filepath.Base(path), err)
	}
	return results.WriteFileAtomic(path, append(b, '\n'))
}

// runLink is where a row's first cell links: the run's report.html when it has one, else its
// directory.
func runLink(dir, rel string) string {
	if rel == "" {
		return ""
	}
	if _, err := os.Stat(filepath.Join(dir, rel, "report.html")); err == nil {
		return rel + "/report.html"
	}
	return rel + "/"
}

// tradeoffIndex is what index.html shows: the plot, the table, the files.
type tradeoffIndex struct {
	Title, Chart, Stem string
	Header             []string
	Rows               []indexRow
}

// indexRow is one table row: its first cell, Label, links to Link (none when empty).
type indexRow struct {
	Label, Link string
	Cells       []string
}

var tradeoffIndexTemplate = htmltemplate.Must(htmltemplate.New("index").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{{.Title}}</title>
<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}td:first-child,th:first-child{text-align:left}img{max-width:100%}</style>
</head><body>
<h1>{{.Title}}</h1>
<p><img src="{{.Chart}}.svg" alt="{{.Title}} trade-off plot"></p>
<table><tr>{{range .Header}}<th>{{.}}</th>{{end}}</tr>
{{range .Rows}}<tr><td>{{if .Link}}<a href="{{.Link}}">{{.Label}}</a>{{else}}{{.Label}}{{end}}</td>{{range .Cells}}<td>{{.}}</td>{{end}}</tr>
{{end}}</table>
<p>The table with what its columns mean: <a href="{{.Stem}}.md">{{.Stem}}.md</a>; the data: <a href="{{.Stem}}.csv">{{.Stem}}.csv</a>, <a href="{{.Stem}}.json">{{.Stem}}.json</a>.</p>
</body></html>
`))

// writeIndex writes index.html.
func writeIndex(dir string, idx tradeoffIndex) error {
	var b strings.Builder
	if err := tradeoffIndexTemplate.Execute(&b, idx); err != nil {
		return fmt.Errorf("%s: %w", TradeoffIndex, err)
	}
	return results.WriteFileAtomic(filepath.Join(dir, TradeoffIndex), []byte(b.String()))
}
