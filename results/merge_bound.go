package results

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// mergeBound sets the merged run's overspend bound from the parts'.
//
// A v2 bound is a promise about every key of its part (the burst excess of each key stays within
// it), and the parts' keys are disjoint, so bounds do not add: two parts that each promise 10
// tokens per key promise 10 tokens per key together, not 20. The merged bound is the largest
// part's, with its own breakdown by source (so Tokens stays the sum of Bound.Sources): every key of
// the merged run was promised at most that much. Within is judged part by part, each part's worst key
// against its own part's bound, recomputed from the parts' figures: true when every part with a
// bound kept it, false when one did not, nil when no part had a bound or none broke it while one
// could not be judged (a source unmeasured). A part's breach is never hidden by another part's
// larger bound, so Within may be false while the merged worst key is within the merged Tokens;
// Within true implies it is. The bound on the excess summed over keys (AllKeys) adds over the
// parts, source by source, and is judged part by part the same way. The merged Unmeasured lists
// every part's, each reason named by its part.
//
// A v1 bound (BoundV1) bounded the whole run's overspend, so v1 bounds add, and Within stays nil.
func mergeBound(sum *Summary, runs []*partRun) {
	b := &sum.Overspend.Bound
	*b = Bound{Sources: map[string]float64{}}
	if sum.V1() {
		for _, r := range runs {
			for name, t := range r.sum.Overspend.Bound.Sources {
				b.Sources[name] += t
			}
			b.Tokens += r.sum.Overspend.Bound.Tokens
		}
		return
	}
	var largest *Overspend
	var worst, worstAll verdicts
	for _, r := range runs {
		o := r.sum.Overspend // a copy: JudgeBound below must not touch the part's summary
		for _, u := range o.Bound.Unmeasured {
			b.Unmeasured = append(b.Unmeasured, Unmeasured{Source: u.Source, Reason: fmt.Sprintf("[part %d] %s", r.sum.Part.Index, u.Reason)})
		}
		if all := o.Bound.AllKeys; all != nil {
			all := *all
			o.Bound.AllKeys = &all
			b.AllKeys = addSources(b.AllKeys, all.Sources)
		}
		if len(o.Bound.Sources) == 0 && len(o.Bound.Unmeasured) == 0 {
			continue
		}
		o.JudgeBound()
		worst.add(o.Bound.Within)
		if o.Bound.AllKeys != nil {
			worstAll.add(o.Bound.AllKeys.Within)
		}
		if largest == nil || o.Bound.Tokens > largest.Bound.Tokens {
			largest = &o
		}
	}
	if largest == nil {
		return
	}
	b.Sources, b.Tokens, b.Within = maps.Clone(largest.Bound.Sources), largest.Bound.Tokens, worst.within()
	if b.AllKeys != nil {
		for _, t := range b.AllKeys.Sources {
			b.AllKeys.Tokens += t
		}
		b.AllKeys.Within = worstAll.within()
	}
}

// addSources adds sources to s's (a new BoundSum when s is nil).
func addSources(s *BoundSum, sources map[string]float64) *BoundSum {
	if s == nil {
		s = &BoundSum{Sources: map[string]float64{}}
	}
	for name, t := range sources {
		s.Sources[name] += t
	}
	return s
}

// verdicts gathers the parts' Within: any false is false, else any undetermined (nil) is nil.
type verdicts struct{ n, broke, unjudged int }

func (v *verdicts) add(w *bool) {
	v.n++
	switch {
	case w == nil:
		v.unjudged++
	case !*w:
		v.broke++
	}
}

// within is the merged verdict: nil when no part was judged or none broke its bound while one
// could not be judged.
func (v verdicts) within() *bool {
	if v.n == 0 || v.broke == 0 && v.unjudged > 0 {
		return nil
	}
	w := v.broke == 0
	return &w
}

// mergeFaults is the first part's fault list (every part ran the same schedule), each fault
// marked failed when it failed in any part, with every failing part's error, named by part.
func mergeFaults(runs []*partRun) []Fault {
	out := slices.Clone(runs[0].sum.Faults)
	errs := make([][]string, len(out))
	for _, r := range runs {
		for i, f := range r.sum.Faults {
			if i < len(out) && f.Failed {
				out[i].Failed = true
				errs[i] = append(errs[i], fmt.Sprintf("[part %d] %s", r.sum.Part.Index, f.Error))
			}
		}
	}
	for i := range out {
		out[i].Error = strings.Join(errs[i], "; ")
	}
	return out
}
