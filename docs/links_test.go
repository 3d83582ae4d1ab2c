// Package docs holds ratelab's reference documentation; its tests check that the relative links of
// every Markdown file in the repository lead to a file that exists, and that no page of docs/
// holds a dated measurement (those live in results/studies/).
package docs

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var (
	// link matches a Markdown link or image target: ](target) or ](target "title").
	link = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	// inlineCode matches a code span, where ](x) is not a link.
	inlineCode = regexp.MustCompile("`[^`]*`")
)

// TestRelativeLinksResolve walks the repository's Markdown files (run directories and hidden
// directories excluded) and fails for each relative link whose file does not exist.
func TestRelativeLinksResolve(t *testing.T) {
	root := ".."
	checked := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "out" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".md") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range link.FindAllStringSubmatch(stripCode(string(b)), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "#") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			target, _, _ = strings.Cut(target, "#")
			checked++
			if _, err := os.Stat(filepath.Join(filepath.Dir(path), target)); err != nil {
				t.Errorf("%s links to %s, which does not exist", path, m[1])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 20 {
		t.Fatalf("checked %d relative links: the walk missed the documentation", checked)
	}
}

// stripCode drops fenced code blocks and inline code, where ](x) is not a link.
func stripCode(s string) string {
	var out strings.Builder
	fenced := false
	for _, line := range strings.Split(s, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if !fenced {
			out.WriteString(inlineCode.ReplaceAllString(line, ""))
			out.WriteByte('\n')
		}
	}
	return out.String()
}

var (
	// isoDate matches a calendar date such as 2026-12-07.
	isoDate = regexp.MustCompile(`\b(19|20)\d\d-[01]\d-[0-3]\d\b`)
	// monthYear matches a date written out, such as "December 2026" or "7 Dec 2026".
	monthYear = regexp.MustCompile(`(?i)\b(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.? +(19|20)\d\d\b`)
	// hexWord matches a word of 7 to 40 hex digits: a commit hash when it mixes digits and letters.
	hexWord = regexp.MustCompile(`\b[0-9a-f]{7,40}\b`)
	digit   = regexp.MustCompile(`[0-9]`)
	letter  = regexp.MustCompile(`[a-f]`)
	// linkTarget matches a link's target, whose anchor may name a note's dated heading.
	linkTarget = regexp.MustCompile(`\]\([^)]*\)`)
)

// TestDocsHoldNoDatedMeasurements keeps docs/ a reference: a page there says what a figure
// means, and a measurement with its date and commit lives in results/studies/, linked from the
// page that quotes it. It fails for a heading with a date, a date in the prose, and a commit
// hash anywhere in a page (code included, where "at a43c33a" would hide as well).
func TestDocsHoldNoDatedMeasurements(t *testing.T) {
	pages, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	if len(pages) < 10 {
		t.Fatalf("found %d pages in docs/: the glob missed the documentation", len(pages))
	}
	for _, page := range pages {
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		fenced := false
		for i, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "#") && !fenced && (isoDate.MatchString(line) || monthYear.MatchString(line)) {
				t.Errorf("%s:%d: a heading with a date (%q): dated runs go to results/studies/", page, i+1, line)
			}
			for _, w := range hexWord.FindAllString(line, -1) {
				if digit.MatchString(w) && letter.MatchString(w) {
					t.Errorf("%s:%d: %q looks like a commit hash: a measurement at a commit goes to results/studies/", page, i+1, w)
				}
			}
			if strings.HasPrefix(strings.TrimSpace(line), "```") {
				fenced = !fenced
				continue
			}
			prose := linkTarget.ReplaceAllString(inlineCode.ReplaceAllString(line, ""), "]")
			if d := isoDate.FindString(prose); d != "" && !fenced {
				t.Errorf("%s:%d: the date %s in the prose: dated runs go to results/studies/", page, i+1, d)
			}
		}
	}
}
