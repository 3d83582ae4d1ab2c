package capacity

import (
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/optimize"
)

// USLPoint is one measurement: throughput X at concurrency or primaries N.
type USLPoint struct {
	N float64 `json:"n"`
	X float64 `json:"x"`
}

// USL is a fitted Universal Scalability Law
//
//	X(N) = lambda*N / (1 + sigma*(N-1) + kappa*N*(N-1))
//
// lambda is the throughput of one unit, sigma the contention (serialised share) and kappa the
// coherency cost (pairwise crosstalk). With kappa > 0 throughput peaks at N* = sqrt((1-sigma)/kappa).
type USL struct {
	Lambda float64 `json:"lambda"`
	Sigma  float64 `json:"sigma"`
	Kappa  float64 `json:"kappa"`
	// R2 is the coefficient of determination over the points (1 = perfect; may be < 0 for a
	// fit worse than the mean).
	R2 float64 `json:"r2"`
	// RMSE is the root mean squared error, in the unit of X.
	RMSE float64 `json:"rmse"`
	// PeakN is N* = sqrt((1-sigma)/kappa); nil when kappa = 0 (no peak: throughput grows
	// for ever, sublinearly when sigma > 0) or sigma >= 1.
	PeakN *float64 `json:"peak_n"`
	// PeakX is X(N*), nil with PeakN.
	PeakX *float64 `json:"peak_x"`
	// Points are the measurements with the fitted value beside each.
	Points []USLFitted `json:"points"`
}

// USLFitted is a measured point and the curve's value at it.
type USLFitted struct {
	N         float64 `json:"n"`
	Measured  float64 `json:"measured"`
	Predicted float64 `json:"predicted"`
}

// ErrTooFewPoints is returned by FitUSL with fewer than three distinct N: three parameters
// need three points.
var ErrTooFewPoints = errors.New("capacity: a USL fit needs measurements at 3 or more distinct N")

// X is the law's throughput at n.
func (u *USL) X(n float64) float64 {
	return uslX(u.Lambda, u.Sigma, u.Kappa, n)
}

func uslX(lambda, sigma, kappa, n float64) float64 {
	return lambda * n / (1 + sigma*(n-1) + kappa*n*(n-1))
}

// FitUSL fits the law to pts by least squares on X. For fixed sigma and kappa the best lambda
// is linear least squares, lambda = sum(x*g)/sum(g*g) with g = N/(1+sigma(N-1)+kappa N(N-1)), so
// only (sigma, kappa) are searched, as (b, c) with sigma = b^2 and kappa = c^2: that keeps both
// >= 0 and lets them reach exactly 0. The search is gonum's Nelder-Mead (derivative free)
// from several starting points, keeping the best, since the surface has flat valleys
// where sigma and kappa trade off.
func FitUSL(pts []USLPoint) (*USL, error) {
	distinct := map[float64]bool{}
	scale := 0.0
	for i, p := range pts {
		if !(p.N >= 1) || math.IsInf(p.N, 0) || !(p.X >= 0) || math.IsInf(p.X, 0) {
			return nil, fmt.Errorf("capacity: USL point %d: n=%v x=%v: want n >= 1 and a finite x >= 0", i, p.N, p.X)
		}
		distinct[p.N] = true
		scale = math.Max(scale, p.X)
	}
	if len(distinct) < 3 {
		return nil, fmt.Errorf("%w (have %d)", ErrTooFewPoints, len(distinct))
	}
	if scale == 0 {
		return nil, fmt.Errorf("capacity: USL: every throughput is 0; nothing to fit")
	}
	lambdaFor := func(s, k float64) float64 {
		var xg, gg float64
		for _, p := range pts {
			g := uslX(1, s, k, p.N)
			xg += p.X * g
			gg += g * g
		}
		return xg / gg
	}
	sse := func(v []float64) float64 {
		s, k := v[0]*v[0], v[1]*v[1]
		l := lambdaFor(s, k)
		sum := 0.0
		for _, p := range pts {
			d := (uslX(l, s, k, p.N) - p.X) / scale
			sum += d * d
		}
		return sum
	}
	var best []float64
	bestF := math.Inf(1)
	for _, start := range [][]float64{{0.3, 0.1}, {0.1, 0.01}, {0.7, 0.3}, {0.01, 0.001}, {0.5, 0}} {
		res, err := optimize.Minimize(optimize.Problem{Func: sse}, start,
			&optimize.Settings{Converger: &optimize.FunctionConverge{Absolute: 1e-15, Iterations: 200}, MajorIterations: 4000},
			&optimize.NelderMead{SimplexSize: 0.05})
		if err != nil || res == nil {
			continue // a start that fails to converge is just not the best one
		}
		if res.F < bestF {
			best, bestF = res.X, res.F
		}
	}
	if best == nil {
		return nil, fmt.Errorf("capacity: USL: the least-squares search did not converge from any start")
	}
	s, k := best[0]*best[0], best[1]*best[1]
	u := &USL{Lambda: lambdaFor(s, k), Sigma: s, Kappa: k}
	mean := 0.0
	for _, p := range pts {
		mean += p.X
	}
	mean /= float64(len(pts))
	var ssRes, ssTot float64
	for _, p := range pts {
		pred := u.X(p.N)
		u.Points = append(u.Points, USLFitted{N: p.N, Measured: p.X, Predicted: pred})
		ssRes += (pred - p.X) * (pred - p.X)
		ssTot += (p.X - mean) * (p.X - mean)
	}
	u.RMSE = math.Sqrt(ssRes / float64(len(pts)))
	u.R2 = 1
	if ssTot > 0 {
		u.R2 = 1 - ssRes/ssTot
	}
	// A kappa below 1e-12 is the optimiser's rounding of 0: report no peak rather than one at
	// millions of primaries.
	if u.Kappa > 1e-12 && u.Sigma < 1 {
		n := math.Sqrt((1 - u.Sigma) / u.Kappa)
		x := u.X(n)
		u.PeakN, u.PeakX = &n, &x
	}
	return u, nil
}
