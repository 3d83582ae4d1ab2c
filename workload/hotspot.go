package workload

import (
	"fmt"
	"math/rand/v2"
)

// Hotspot puts a fraction hotShare of the traffic on the first hotKeys ranks and the rest on the
// other n - hotKeys ranks, uniform inside each set: P(k) = hotShare/hotKeys for k < hotKeys and
// (1-hotShare)/(n-hotKeys) otherwise. It is the "one noisy tenant" shape: hotKeys = 1,
// hotShare = 0.5 sends half of all requests to rank 0.
//
// A Hotspot holds only constants, so it is safe for concurrent use with one *rand.Rand per goroutine.
type Hotspot struct {
	n, hotKeys uint64
	hotShare   float64
}

// NewHotspot returns a hotspot distribution. n >= 2; hotKeys in [1, n-1], so that both sets are
// non-empty; hotShare in [0, 1].
func NewHotspot(n, hotKeys uint64, hotShare float64) (*Hotspot, error) {
	if n < 2 {
		return nil, fmt.Errorf("%w: hotspot n %d: must be >= 2 ranks (a hot set and a cold set)", ErrInvalid, n)
	}
	if hotKeys < 1 || hotKeys >= n {
		return nil, fmt.Errorf("%w: hotspot hot_keys %d: must be in [1, n-1] = [1, %d]", ErrInvalid, hotKeys, n-1)
	}
	if !(hotShare >= 0 && hotShare <= 1) { // also rejects NaN
		return nil, fmt.Errorf("%w: hotspot hot_share %v: must be a fraction in [0, 1]", ErrInvalid, hotShare)
	}
	return &Hotspot{n: n, hotKeys: hotKeys, hotShare: hotShare}, nil
}

// N is the number of ranks.
func (h *Hotspot) N() uint64 { return h.n }

// HotKeys is the size of the hot set, ranks [0, HotKeys()).
func (h *Hotspot) HotKeys() uint64 { return h.hotKeys }

// HotShare is the fraction of draws that land in the hot set.
func (h *Hotspot) HotShare() float64 { return h.hotShare }

// Draw returns a rank in [0, n). It allocates nothing.
func (h *Hotspot) Draw(r *rand.Rand) uint64 {
	// r.Float64 is in [0, 1): hotShare = 0 never picks the hot set, hotShare = 1 always does.
	if r.Float64() < h.hotShare {
		return r.Uint64N(h.hotKeys)
	}
	return h.hotKeys + r.Uint64N(h.n-h.hotKeys)
}
