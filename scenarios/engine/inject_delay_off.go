//go:build !ratelab_inject_delay

package engine

import (
	"time"

	"ratelab/limiter"
)

// InjectedDelay is 0 in every normal build; see inject_delay.go (-tags ratelab_inject_delay).
const InjectedDelay time.Duration = 0

func withInjectedDelay(l limiter.Limiter) limiter.Limiter { return l }
