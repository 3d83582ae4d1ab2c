package simulate

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
)

// Service-time distribution kinds.
const (
	Lognormal   = "lognormal"
	Exponential = "exponential"
	Constant    = "constant"
)

// Service is one primary's time to run one script call, in microseconds of its single thread.
type Service struct {
	// Kind is lognormal (default), exponential or constant.
	Kind string `json:"kind"`
	// MeanUs is the mean service time in µs, > 0.
	MeanUs float64 `json:"mean_us"`
	// CV is the coefficient of variation (stddev/mean) of a lognormal; ignored otherwise.
	CV float64 `json:"cv"`
}

// Validate names the bad field.
func (s Service) Validate() error {
	var errs []error
	switch s.Kind {
	case "", Lognormal, Exponential, Constant:
	default:
		errs = append(errs, fmt.Errorf("service kind %q: use lognormal, exponential or constant", s.Kind))
	}
	if !(s.MeanUs > 0) || math.IsInf(s.MeanUs, 0) {
		errs = append(errs, fmt.Errorf("service mean %v µs: must be > 0", s.MeanUs))
	}
	if !(s.CV >= 0 && s.CV <= 20) {
		errs = append(errs, fmt.Errorf("service cv %v: must be in [0, 20]", s.CV))
	}
	return errors.Join(errs...)
}

// sampler draws service times in seconds.
type sampler func(r *rand.Rand) float64

func (s Service) sampler() sampler {
	mean := s.MeanUs / 1e6
	switch s.Kind {
	case Exponential:
		return func(r *rand.Rand) float64 { return mean * r.ExpFloat64() }
	case Constant:
		return func(*rand.Rand) float64 { return mean }
	}
	if s.CV == 0 {
		return func(*rand.Rand) float64 { return mean }
	}
	// A lognormal with mean m and coefficient of variation c has sigma^2 = ln(1+c^2) and
	// mu = ln(m) - sigma^2/2.
	sig := math.Sqrt(math.Log1p(s.CV * s.CV))
	mu := math.Log(mean) - sig*sig/2
	return func(r *rand.Rand) float64 { return math.Exp(mu + sig*r.NormFloat64()) }
}

// Quantile is one point of an empirical distribution: P(X <= Ms) = P.
type Quantile struct {
	P  float64 `json:"p"`
	Ms float64 `json:"ms"`
}

// Empirical is a distribution given by its quantiles, interpolated linearly between them.
// An empty Empirical is the constant 0.
type Empirical []Quantile

// Validate checks the quantiles increase in P (from 0 to 1) and in Ms.
func (e Empirical) Validate() error {
	if len(e) == 0 {
		return nil
	}
	if e[0].P != 0 || e[len(e)-1].P != 1 {
		return fmt.Errorf("client quantiles: must run from p=0 to p=1, have %v..%v", e[0].P, e[len(e)-1].P)
	}
	for i := 1; i < len(e); i++ {
		if e[i].P < e[i-1].P || e[i].Ms < e[i-1].Ms || e[i-1].Ms < 0 {
			return fmt.Errorf("client quantiles: point %d (p=%v, %v ms) is below point %d (p=%v, %v ms); both must grow", i, e[i].P, e[i].Ms, i-1, e[i-1].P, e[i-1].Ms)
		}
	}
	return nil
}

// sample draws from e, in seconds.
func (e Empirical) sample(r *rand.Rand) float64 {
	if len(e) == 0 {
		return 0
	}
	u := r.Float64()
	i := sort.Search(len(e), func(i int) bool { return e[i].P >= u })
	if i == 0 {
		return e[0].Ms / 1e3
	}
	a, b := e[i-1], e[i]
	if b.P == a.P {
		return b.Ms / 1e3
	}
	return (a.Ms + (b.Ms-a.Ms)*(u-a.P)/(b.P-a.P)) / 1e3
}

// ConstantMs is an Empirical that is always ms.
func ConstantMs(ms float64) Empirical { return Empirical{{0, ms}, {1, ms}} }
