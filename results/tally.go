package results

import (
	"bufio"
	"bytes"
	"cmp"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// KeyTally is one key's line in keys.csv, the run's tally: how many of the key's requests completed
// and how many of its allowed ones overspent. A key's requests all happen in one generator (see
// workload.Part), so merging the tallies of parts is adding them, and the hot keys of a merged run
// are exactly the ones one generator would have seen.
type KeyTally struct {
	// Key is the limiter key, e.g. "rl:{tenant-3}:read".
	Key string
	// Completed is the number of the key's requests that ended, in a decision or an error (the
	// column keeps the name decisions).
	Completed int64
	// Overspend and OverspendTokens are the key's allowed requests beyond its envelope and
	// their cost, before the reorder window withdraws any false denies (those are not per key).
	Overspend, OverspendTokens int64
}

const tallyHeader = "key,decisions,overspend,overspend_tokens"

// WriteTally writes keys.csv: the header and one line per key, in the order given. Keys contain
// no commas or newlines (limiter.KeyFor builds them from tenant and endpoint names).
func WriteTally(w io.Writer, keys []KeyTally) error {
	bw := bufio.NewWriter(w)
	bw.WriteString(tallyHeader + "\n")
	var buf []byte
	for _, k := range keys {
		if strings.ContainsAny(k.Key, ",\n\r") || k.Completed < 0 || k.Overspend < 0 || k.OverspendTokens < 0 {
			return fmt.Errorf("%s: key %q: a key may not hold commas or newlines, and counts are >= 0: %w", TallyFile, k.Key, ErrInvalid)
		}
		buf = append(buf[:0], k.Key...)
		buf = append(buf, ',')
		buf = strconv.AppendInt(buf, k.Completed, 10)
		buf = append(buf, ',')
		buf = strconv.AppendInt(buf, k.Overspend, 10)
		buf = append(buf, ',')
		buf = strconv.AppendInt(buf, k.OverspendTokens, 10)
		buf = append(buf, '\n')
		bw.Write(buf)
	}
	return bw.Flush()
}

// ReadTally reads keys.csv.
func ReadTally(r io.Reader) ([]KeyTally, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var out []KeyTally
	for n := 1; sc.Scan(); n++ {
		line := sc.Bytes()
		if n == 1 {
			if string(line) != tallyHeader {
				return nil, fmt.Errorf("%s line 1: header %.80q, want %q: %w", TallyFile, line, tallyHeader, ErrCorrupt)
			}
			continue
		}
		if len(line) == 0 {
			continue
		}
		f := bytes.Split(line, []byte{','})
		if len(f) != 4 {
			return out, fmt.Errorf("%s line %d: %d fields, want 4 (%s): %w", TallyFile, n, len(f), tallyHeader, ErrCorrupt)
		}
		k := KeyTally{Key: string(f[0])}
		for i, p := range []*int64{&k.Completed, &k.Overspend, &k.OverspendTokens} {
			v, err := strconv.ParseInt(string(f[i+1]), 10, 64)
			if err != nil || v < 0 {
				return out, fmt.Errorf("%s line %d column %d: %q is not a count >= 0: %w", TallyFile, n, i+2, f[i+1], ErrCorrupt)
			}
			*p = v
		}
		out = append(out, k)
	}
	if err := sc.Err(); err != nil {
		return out, fmt.Errorf("%s: %w", TallyFile, err)
	}
	if out == nil {
		out = []KeyTally{}
	}
	return out, nil
}

// TopKeys returns the n keys with the most decisions, largest first (ties by key), with their
// share of all decisions in the tally. node, if not nil, names the primary serving a key.
func TopKeys(keys []KeyTally, n int, node func(key string) string) []HotKey {
	var all int64
	for _, k := range keys {
		all += k.Completed
	}
	sorted := slices.Clone(keys)
	slices.SortFunc(sorted, func(a, b KeyTally) int {
		return cmp.Or(cmp.Compare(b.Completed, a.Completed), strings.Compare(a.Key, b.Key))
	})
	out := []HotKey{}
	for _, k := range sorted[:min(n, len(sorted))] {
		if k.Completed == 0 {
			break
		}
		h := HotKey{Key: k.Key, Share: Ratio(k.Completed, all)}
		if node != nil {
			h.Node = node(k.Key)
		}
		out = append(out, h)
	}
	return out
}
