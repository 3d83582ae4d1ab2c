package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// The pages whose `ratelab ...` commands must exist: the README's tour and the reference.
// docs/cli.md is generated from the tree and kept current by TestCLIDocIsCurrent.
var documentedPages = []string{"../../README.md", "../../docs/*.md", "../../deploy/*/README.md"}

// codeSpan is an inline code span, which may run over a line break.
var codeSpan = regexp.MustCompile("`([^`]+)`")

// TestDocumentedCommandsExist finds every ratelab command in the pages' code blocks and inline
// code, and checks it as the user would type it: its command path exists and is not an old
// spelling, each of its flags is one the command has, and the command's --help runs.
func TestDocumentedCommandsExist(t *testing.T) {
	t.Parallel()
	var pages []string
	for _, g := range documentedPages {
		m, err := filepath.Glob(g)
		if err != nil {
			t.Fatal(err)
		}
		pages = append(pages, m...)
	}
	checked := 0
	for _, page := range pages {
		if filepath.Base(page) == filepath.Base(cliDocFile) {
			continue
		}
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range documentedCommands(string(b)) {
			checked++
			if err := checkCommand(c.args); err != nil {
				t.Errorf("%s:%d: ratelab %s: %v", page, c.line, strings.Join(c.args, " "), err)
			}
		}
	}
	t.Logf("checked %d commands", checked)
	if checked < 50 {
		t.Fatalf("checked %d commands: the pages' commands were missed", checked)
	}
}

// documentedCommand is one `ratelab ...` of a page: its words after ratelab, up to the end of
// the shell command, and the line it starts on.
type documentedCommand struct {
	args []string
	line int
}

// documentedCommands are the ratelab commands of a Markdown page: each line of a fenced code
// block that runs ratelab, and each inline code span that starts with "ratelab ".
func documentedCommands(page string) []documentedCommand {
	var out []documentedCommand
	var prose strings.Builder
	fenced := false
	lines := strings.Split(page, "\n")
	for i, line := range lines {
		trimmed := strings.TrimSpace(line)
		// A shell line continued with a backslash is one command.
		for j := i + 1; fenced && strings.HasSuffix(trimmed, "\\") && j < len(lines); j++ {
			trimmed = strings.TrimSuffix(trimmed, "\\") + " " + strings.TrimSpace(lines[j])
		}
		if strings.HasPrefix(trimmed, "```") {
			fenced = !fenced
			prose.WriteByte('\n')
			continue
		}
		if !fenced {
			prose.WriteString(line)
			prose.WriteByte('\n')
			continue
		}
		prose.WriteByte('\n')
		for _, prefix := range []string{"$ ", "./bin/ratelab ", "bin/ratelab "} {
			if strings.HasPrefix(trimmed, prefix) {
				trimmed = "ratelab " + strings.TrimPrefix(trimmed, prefix)
			}
		}
		if args, ok := ratelabArgs(trimmed); ok {
			out = append(out, documentedCommand{args, i + 1})
		}
	}
	text := prose.String()
	for _, m := range codeSpan.FindAllStringSubmatchIndex(text, -1) {
		span := strings.Join(strings.Fields(text[m[2]:m[3]]), " ")
		if args, ok := ratelabArgs(span); ok {
			out = append(out, documentedCommand{args, strings.Count(text[:m[0]], "\n") + 1})
		}
	}
	return out
}

// ratelabArgs is the words after "ratelab" in s, up to the end of the shell command (a pipe, a
// redirect, a comment, --); placeholders' brackets are dropped. ok is false when s does not
// run ratelab.
func ratelabArgs(s string) (args []string, ok bool) {
	words := strings.Fields(s)
	if len(words) == 0 || words[0] != "ratelab" {
		return nil, false
	}
	for _, w := range words[1:] {
		if w == "|" || w == "--" || w == "&&" || w == ";" || strings.HasPrefix(w, "#") || strings.HasPrefix(w, ">") || strings.HasPrefix(w, "2>") {
			break
		}
		w = strings.Trim(w, "[]")
		if before, _, cut := strings.Cut(w, "|"); cut {
			if before != "" {
				args = append(args, before)
			}
			break
		}
		if w != "" && w != "..." {
			args = append(args, w)
		}
	}
	return args, true
}

// checkCommand resolves args as cobra does and checks the command path, each flag's name, and
// the command's --help. Flags' values are not parsed: the pages write placeholders (N, DIR).
func checkCommand(args []string) error {
	root := newRootCmd()
	cmd, rest, err := root.Find(args)
	if err != nil {
		return err
	}
	if cmd.Hidden {
		return runHelp(root, args) // an old spelling: its error names the new one
	}
	cmd.InitDefaultHelpFlag()
	if cmd.HasAvailableSubCommands() {
		// A group has no flags of its own: what is left is an unknown subcommand or flag.
		if err := cmd.ParseFlags(rest); err != nil {
			return cmd.FlagErrorFunc()(cmd, err)
		}
		if err := cmd.ValidateArgs(cmd.Flags().Args()); err != nil {
			return err
		}
	}
	for _, w := range rest {
		if !strings.HasPrefix(w, "-") || w == "-" || negative.MatchString(w) {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimLeft(w, "-"), "=")
		long := strings.HasPrefix(w, "--")
		if (long && cmd.Flags().Lookup(name) == nil) || (!long && cmd.Flags().ShorthandLookup(name[:1]) == nil) {
			return cmd.FlagErrorFunc()(cmd, cmd.ParseFlags([]string{w}))
		}
	}
	return runHelp(root, append(strings.Fields(strings.TrimPrefix(cmd.CommandPath(), root.Name())), "--help"))
}

// negative matches a negative number, a flag's value rather than a flag.
var negative = regexp.MustCompile(`^-[0-9.]`)

// runHelp executes root with args, its output discarded, and returns its error.
func runHelp(root *cobra.Command, args []string) error {
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(args)
	return root.Execute()
}

// TestCheckCommand: the check refuses what a user could not type and lets placeholders pass.
func TestCheckCommand(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		line string
		want string // "" when the line is a command that exists
	}{
		{"ratelab run hot-tenant --rate 20000 --duration 10s -o json", ""},
		{"ratelab kubernetes --parts N -- NAME --cluster redis://...", ""},
		{"ratelab simulate calibrate [SCENARIO] --rate 1000 [--probe-rate 30000] --file calibration.json", ""},
		{"ratelab capacity sweep NAME | tee out.txt", ""},
		{"ratelab rn smoke", `unknown command "rn"`},
		{"ratelab run smoke --bogus 3", "unknown flag: --bogus"},
		{"ratelab run smoke -Z", "unknown shorthand flag"},
		{"ratelab scenarios lst", `unknown command "lst"`},
		{"ratelab regions sweep --periods 1s", "is now 'ratelab regions'"},
		{"ratelab simulate --shards 30", "'ratelab simulate predict --primaries ...'"},
		{"ratelab attack --workers 4", "it is --concurrency now"},
	} {
		args, ok := ratelabArgs(tc.line)
		if !ok {
			t.Fatalf("%q: not read as a ratelab command", tc.line)
		}
		err := checkCommand(args)
		if (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%q: %v; want %q", tc.line, err, tc.want)
		}
	}
}
