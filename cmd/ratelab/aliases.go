package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"ratelab/limiter"
	"ratelab/run/attack"
)

// The deprecated spellings of flags are all made by alias or aliasTo: a hidden flag that sets the
// new flag's value (and marks the new flag changed, so code reading Changed sees either spelling),
// deprecated by cobra, which prints "Flag --old has been deprecated, use --new ..." on stderr
// when the old spelling is used.

// aliasValue is the Value of a deprecated spelling: Set converts its argument with conv and sets
// the target flag with it.
type aliasValue struct {
	target *pflag.Flag
	conv   func(string) (string, error)
	typ    string
	last   string
}

func (a *aliasValue) Set(s string) error {
	v, err := a.conv(s)
	if err == nil {
		err = a.target.Value.Set(v)
	}
	if err != nil {
		return err
	}
	a.last, a.target.Changed = s, true
	return nil
}

func (a *aliasValue) String() string { return a.last }
func (a *aliasValue) Type() string   { return a.typ }

// alias registers old as a deprecated spelling of the flag named new on fs: the same type, the
// same value.
func alias(fs *pflag.FlagSet, old, new string) {
	t := fs.Lookup(new)
	aliasTo(fs, old, new, t.Value.Type(), t.NoOptDefVal, func(s string) (string, error) { return s, nil })
}

// aliasTo registers old as a deprecated flag of type typ whose value conv turns into a value
// of the flag named new (--json=true into --output json, --policy-rate 5 into --policy
// rate=5,burst=...). noOpt is the value a bare --old means ("true" for a bool, else "").
func aliasTo(fs *pflag.FlagSet, old, new, typ, noOpt string, conv func(string) (string, error)) {
	aliasMsg(fs, old, new, typ, noOpt, "use --"+new+" instead", conv)
}

// aliasMsg is aliasTo with the deprecation message msg ("use --new ...").
func aliasMsg(fs *pflag.FlagSet, old, new, typ, noOpt, msg string, conv func(string) (string, error)) {
	t := fs.Lookup(new)
	if t == nil {
		panic("alias --" + old + ": no flag --" + new)
	}
	fs.Var(&aliasValue{target: t, conv: conv, typ: typ}, old, "deprecated: use --"+new)
	fs.Lookup(old).NoOptDefVal = noOpt
	if err := fs.MarkDeprecated(old, msg); err != nil {
		panic(err)
	}
}

// aliasJSON registers --json as the deprecated spelling of --output json.
func aliasJSON(fs *pflag.FlagSet) {
	aliasTo(fs, "json", "output", "bool", "true", func(s string) (string, error) {
		b, err := strconv.ParseBool(s)
		if err != nil {
			return "", fmt.Errorf("--json %q: want true or false; better, --output json", s)
		}
		if b {
			return outputJSON, nil
		}
		return outputText, nil
	})
}

// policyFlag is --policy rate=R,burst=B: a per-key token bucket written into two fields of an
// options struct. With window set (attack's declared policy, see withWindow) it also reads a
// sliding window limit=N,window=W.
type policyFlag struct {
	rate   *float64
	burst  func() int64
	set    func(rate float64, burst int64)
	window *attack.WindowPolicy
}

// newPolicyFlag is a --policy writing its rate into *rate and its burst through setBurst
// (burst reads it back): the bursts of the options are int64 in one place and float64 in another.
func newPolicyFlag(rate *float64, burst func() int64, setBurst func(int64)) *policyFlag {
	return &policyFlag{rate: rate, burst: burst, set: func(r float64, b int64) { *rate = r; setBurst(b) }}
}

// withWindow makes p accept limit=N,window=W too, read into *w; either form zeroes the other.
func (p *policyFlag) withWindow(w *attack.WindowPolicy) *policyFlag {
	p.window = w
	return p
}

func (p *policyFlag) String() string {
	if p.window != nil && p.window.Limit > 0 {
		return p.window.String()
	}
	if *p.rate == 0 && p.burst() == 0 {
		return "" // no default: the scenario's policy
	}
	return "rate=" + strconv.FormatFloat(*p.rate, 'g', -1, 64) + ",burst=" + strconv.FormatInt(p.burst(), 10)
}

func (p *policyFlag) Set(s string) error {
	var pol limiter.BucketPolicy
	var win attack.WindowPolicy
	var err error
	if p.window != nil {
		pol, win, err = attack.ParseDeclared(s)
	} else {
		pol, err = attack.ParsePolicy(s)
	}
	if err != nil {
		// The flag's name is in pflag's message already; the parser's own prefix is noise here.
		return errors.New(strings.TrimPrefix(err.Error(), attack.ErrInvalid.Error()+": "))
	}
	p.set(pol.Rate, pol.Burst)
	if p.window != nil {
		*p.window = win
	}
	return nil
}

func (p *policyFlag) Type() string {
	if p.window != nil {
		return "POLICY"
	}
	return "rate=R,burst=B"
}

// aliasPolicyRate and aliasPolicyBurst register old as a deprecated flag setting one half of
// --policy (the other half keeps its value).
func aliasPolicyRate(fs *pflag.FlagSet, p *policyFlag, old string) {
	aliasMsg(fs, old, "policy", "float", "", "use --policy rate=R,burst=B instead (R tokens/s refill)", func(s string) (string, error) {
		return "rate=" + s + ",burst=" + strconv.FormatInt(p.burst(), 10), nil
	})
}

func aliasPolicyBurst(fs *pflag.FlagSet, p *policyFlag, old string) {
	aliasMsg(fs, old, "policy", "int", "", "use --policy rate=R,burst=B instead (B tokens of capacity)", func(s string) (string, error) {
		return "rate=" + strconv.FormatFloat(*p.rate, 'g', -1, 64) + ",burst=" + s, nil
	})
}
