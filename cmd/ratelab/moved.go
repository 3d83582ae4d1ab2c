package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Old spellings. ratelab has had no release, so nothing old keeps working under a second name:
// a command that moved and a flag that was renamed fail (exit 1) with a message naming the
// spelling that replaced it, so that a user's muscle memory costs one error and no surprise.
// The two tables below are the only record of the old spellings.

// movedCommands are the commands that moved: old is the path below ratelab as it was typed, now
// the command (with its arguments) to type instead.
var movedCommands = []struct{ old, now string }{
	{"regions sweep", "regions"},
	{"scenarios side-by-side", "side-by-side"},
	{"scenarios in-the-wild", "in-the-wild"},
	{"trace record", "run NAME --record-trace FILE"},
	{"trace replay", "run NAME --trace FILE"},
}

// movedGroups are commands that became groups: a flag given to one was a flag of the command
// that now sits below it (`ratelab simulate --primaries 30` is `ratelab simulate predict`).
var movedGroups = map[string]string{
	"simulate": "simulate predict",
}

// renamedFlags maps a removed flag to its successors in order of preference: the first one the
// command has is the one its error names, as say (the flag written as the user types it).
var renamedFlags = map[string][]struct{ flag, say string }{
	"json":         {{"output", "-o json"}},
	"format":       {{"output", "-o FORMAT"}},
	"workers":      {{"concurrency", "--concurrency"}},
	"max-workers":  {{"max-inflight", "--max-inflight"}},
	"timeout":      {{"request-timeout", "--request-timeout"}, {"decision-timeout", "--decision-timeout"}},
	"run-dir":      {{"out", "--out"}},
	"policy-rate":  {{"policy", "--policy rate=R,burst=B"}},
	"policy-burst": {{"policy", "--policy rate=R,burst=B"}},
	"rate":         {{"policy", "--policy rate=R,burst=B (R, the refill rate)"}},
	"burst":        {{"policy", "--policy rate=R,burst=B (B, the capacity)"}},
	"out":          {{"file", "--file"}},
	// One word, one meaning: a shard is a primary with its replicas; the model counts primaries.
	"shards":         {{"primaries", "--primaries"}},
	"failover-shard": {{"failover-primary", "--failover-primary"}},
	"per-shard-rps":  {{"per-primary-rps", "--per-primary-rps"}},
}

// addMovedCommands puts under root a hidden command at each old path of movedCommands, which
// fails naming the new one. It takes any flags and arguments, --help included, so that the
// old spelling fails the same way however it is typed.
func addMovedCommands(root *cobra.Command) {
	for _, m := range movedCommands {
		words := strings.Fields(m.old)
		parent, _, err := root.Find(words[:len(words)-1])
		if err != nil || parent.CommandPath() != strings.Join(append([]string{root.Name()}, words[:len(words)-1]...), " ") {
			panic(fmt.Sprintf("moved command %q: no parent command %q", m.old, strings.Join(words[:len(words)-1], " ")))
		}
		old, now := m.old, m.now
		parent.AddCommand(&cobra.Command{
			Use:                words[len(words)-1],
			Short:              "moved: ratelab " + now,
			Hidden:             true,
			DisableFlagParsing: true,
			RunE: func(*cobra.Command, []string) error {
				return fmt.Errorf("'ratelab %s' is now 'ratelab %s' (ratelab %s --help)", old, now, strings.Fields(now)[0])
			},
		})
	}
}

// flagError is every command's FlagErrorFunc: an unknown flag that was renamed says its new
// spelling, and a flag given to a group that was a command names the command below it.
func flagError(cmd *cobra.Command, err error) error {
	var notExist *pflag.NotExistError
	if !errors.As(err, &notExist) {
		return err
	}
	name, typed := notExist.GetSpecifiedName(), "--"+notExist.GetSpecifiedName()
	if notExist.GetSpecifiedShortnames() != "" {
		typed = "-" + name
	}
	path := strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name()+" ")
	if now, ok := movedGroups[path]; ok {
		if hasFlag(cmd.Root(), now, name) {
			return fmt.Errorf("%w: 'ratelab %s' is a group of commands now; type 'ratelab %s %s ...' (ratelab %s --help)", err, path, now, typed, now)
		}
		for _, s := range renamedFlags[name] {
			if hasFlag(cmd.Root(), now, s.flag) {
				return fmt.Errorf("%w: 'ratelab %s' is a group of commands now; type 'ratelab %s %s ...' (ratelab %s --help)", err, path, now, s.say, now)
			}
		}
	}
	if typed[1] != '-' {
		return err
	}
	for _, s := range renamedFlags[name] {
		if cmd.Flags().Lookup(s.flag) != nil {
			return fmt.Errorf("%w: it is %s now", err, s.say)
		}
	}
	return err
}

// hasFlag reports whether the command at path below root has the flag name (or shorthand).
func hasFlag(root *cobra.Command, path, name string) bool {
	cmd, _, err := root.Find(strings.Fields(path))
	if err != nil {
		return false
	}
	return cmd.Flags().Lookup(name) != nil || (len(name) == 1 && cmd.Flags().ShorthandLookup(name) != nil)
}
