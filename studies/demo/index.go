package demo

import (
	"bytes"
	"fmt"
	"html/template"
	"os"
	"path"
	"path/filepath"

	"ratelab/report"
)

// IndexFile is the page that links every step of a demo.
const IndexFile = "index.html"

// plotStems are the charts of each run shown on the index, in order; each links its SVG.
var plotStems = []string{report.ThroughputChart, report.LatencyChart, report.OverspendChart}

type runView struct {
	Label, Report, Summary string
	Plots                  []string
}

type stepView struct {
	Title     string
	Narration []string
	Facts     []Fact
	Runs      []runView
}

var indexTemplate = template.Must(template.New(IndexFile).Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>ratelab demo</title>
<style>
body{font-family:sans-serif;max-width:72em;margin:1em auto;padding:0 1em;color:#222}
h2{border-bottom:1px solid #ccc;padding-bottom:.2em}
table{border-collapse:collapse;margin:.5em 0}td{padding:.2em .8em;border:1px solid #ddd}
.plots img{width:32%;min-width:18em;margin:.2em;border:1px solid #eee}
</style></head><body>
<h1>ratelab demo: what a distributed rate limiter on Redis Cluster gets wrong, step by step</h1>
{{if not .}}<p>No step finished (the demo was interrupted or failed before the first step completed).</p>{{end}}
{{range .}}<section>
<h2>{{.Title}}</h2>
{{range .Narration}}<p>{{.}}</p>
{{end}}<table>{{range .Facts}}<tr><td>{{.Label}}</td><td><b>{{.Value}}</b></td></tr>{{end}}</table>
{{range .Runs}}<h3>{{.Label}}: <a href="{{.Report}}">full report</a> · <a href="{{.Summary}}">summary.json</a></h3>
<div class="plots">{{range .Plots}}<a href="{{.}}"><img src="{{.}}" alt="{{.}}"></a>{{end}}</div>
{{end}}</section>
{{end}}</body></html>
`))

// WriteIndex writes dir/index.html for the finished steps: narration, key numbers, and for each
// run its plots (SVG, by relative path, only those that exist) and links to its report.html and
// summary.json. It is written atomically, so an interrupted demo never leaves half a page.
func WriteIndex(dir string, steps []Step) error {
	views := make([]stepView, 0, len(steps))
	for _, st := range steps {
		v := stepView{Title: st.Title, Narration: st.Narration, Facts: st.Facts}
		for _, r := range st.Runs {
			// Links are URL paths relative to the index: forward slashes whatever the OS.
			rel := filepath.ToSlash(r.Dir)
			rv := runView{Label: r.Label, Report: path.Join(rel, "report.html"), Summary: path.Join(rel, "summary.json")}
			stems := plotStems
			if len(st.Plots) > 0 {
				stems = st.Plots
			}
			for _, stem := range stems {
				if _, err := os.Stat(filepath.Join(dir, r.Dir, stem+".svg")); err == nil {
					rv.Plots = append(rv.Plots, path.Join(rel, stem+".svg"))
				}
			}
			v.Runs = append(v.Runs, rv)
		}
		views = append(views, v)
	}
	var buf bytes.Buffer
	if err := indexTemplate.Execute(&buf, views); err != nil {
		return fmt.Errorf("demo index: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("demo directory %s: %w", dir, err)
	}
	tmp, err := os.CreateTemp(dir, ".index-*.html")
	if err != nil {
		return fmt.Errorf("demo index in %s: %w", dir, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(buf.Bytes()); err != nil {
		tmp.Close()
		return fmt.Errorf("demo index %s: %w", tmp.Name(), err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("demo index %s: %w", tmp.Name(), err)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), filepath.Join(dir, IndexFile))
}
