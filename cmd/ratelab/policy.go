package main

import (
	"errors"
	"strconv"
	"strings"

	"ratelab/limiter"
	"ratelab/run/attack"
)

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
