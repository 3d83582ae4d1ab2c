package workload

import (
	"fmt"
	"strconv"
	"strings"
)

// Part names one of Count load generators that share one scenario: generator Index runs the
// requests of the tenants it owns and no others, so every key's decisions (and the overspend
// envelope that judges them) stay inside one generator, and their records can be merged exactly.
//
// Ownership is tenant index mod Count: part i owns tenants i, i+Count, i+2*Count, ... Tenants
// are numbered by Zipf rank (tenant 0 is the hottest), so the split is deterministic, needs no
// table, and every part gets every Count-th rank: the hottest tenant lands in part 0, the
// second hottest in part 1, and so on. The rate is partitioned with the tenants: a part offers
// exactly its tenants' share of the schedule, which with Zipf skew is not 1/Count (part 0 carries
// the most). The zero value and {0, 1} are "not split": the one part owns every tenant.
type Part struct {
	// Index is this generator's part, 0 <= Index < Count.
	Index int
	// Count is the number of generators the tenants are split between, >= 1 (0 reads as 1).
	Count int
}

// ParsePart parses the --part flag's "i/N" form: part i of N, 0 <= i < N, N >= 1.
func ParsePart(s string) (Part, error) {
	is, ns, ok := strings.Cut(strings.TrimSpace(s), "/")
	if !ok {
		return Part{}, fmt.Errorf("--part %q: write INDEX/COUNT, e.g. 0/4 for the first of 4 generators: %w", s, ErrInvalid)
	}
	i, ierr := strconv.Atoi(strings.TrimSpace(is))
	n, nerr := strconv.Atoi(strings.TrimSpace(ns))
	if ierr != nil || nerr != nil {
		return Part{}, fmt.Errorf("--part %q: INDEX and COUNT must be whole numbers, e.g. 0/4: %w", s, ErrInvalid)
	}
	sh := Part{Index: i, Count: n}
	if err := sh.validate(); err != nil {
		return Part{}, fmt.Errorf("--part %q: %w", s, err)
	}
	return sh, nil
}

// Validate reports a part outside 0 <= Index < Count, Count >= 1 (a zero Part is valid: one part).
func (s Part) Validate() error {
	if s == (Part{}) {
		return nil
	}
	return s.validate()
}

func (s Part) validate() error {
	switch {
	case s.Count < 1:
		return fmt.Errorf("part count %d: want 1 or more generators: %w", s.Count, ErrInvalid)
	case s.Index < 0 || s.Index >= s.Count:
		return fmt.Errorf("part index %d of %d: want 0 <= index < %d (parts are numbered from 0, "+
			"as a Kubernetes Indexed Job's JOB_COMPLETION_INDEX is): %w", s.Index, s.Count, s.Count, ErrInvalid)
	}
	return nil
}

// Split reports whether the load is split between more than one generator.
func (s Part) Split() bool { return s.Count > 1 }

// Owns reports whether tenant (its dense index, 0 = hottest) belongs to this part. One modulo:
// cheap enough to call for every scheduled request.
func (s Part) Owns(tenant uint64) bool {
	return s.Count <= 1 || tenant%uint64(s.Count) == uint64(s.Index)
}

// String is the "i/N" form ParsePart reads.
func (s Part) String() string {
	if s.Count == 0 {
		return "0/1"
	}
	return strconv.Itoa(s.Index) + "/" + strconv.Itoa(s.Count)
}
