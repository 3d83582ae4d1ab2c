package cluster

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// cleanupBatch is how many keys one SCAN step asks for and one UNLINK removes.
const cleanupBatch = 500

// KeyPrefix returns the prefix every key of run runID carries on a shared cluster:
// "ratelab:<runID>:". Prepended to a key such as rl:{tenant}:read it keeps the key's slot,
// because Redis hashes the first {...} and the prefix has no braces. runID may hold letters,
// digits, '-', '_' and '.', so that the prefix is also a literal SCAN pattern.
func KeyPrefix(runID string) (string, error) {
	if runID == "" || len(runID) > 64 {
		return "", fmt.Errorf("cluster: run id %q: want 1..64 characters", runID)
	}
	for _, r := range runID {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return "", fmt.Errorf("cluster: run id %q: character %q not allowed; use letters, digits, '-', '_' or '.' (braces would move keys to another slot, glob characters would widen the cleanup)", runID, r)
		}
	}
	return "ratelab:" + runID + ":", nil
}

// CleanupPrefix deletes every key that starts with prefix, and only those: SCAN MATCH
// <prefix>* on every primary (each primary holds its own slots' keys) and UNLINK in batches. It
// returns how many keys it deleted. Glob characters in prefix are escaped, so a prefix never
// matches more than itself; an empty prefix is refused (it would delete everything).
func CleanupPrefix(ctx context.Context, c *redis.ClusterClient, prefix string) (int64, error) {
	if prefix == "" {
		return 0, fmt.Errorf("cluster: CleanupPrefix: empty prefix would delete every key; use KeyPrefix(runID)")
	}
	pattern := escapeGlob(prefix) + "*"
	var deleted atomic.Int64
	err := c.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error {
		var cursor uint64
		for {
			keys, next, err := n.Scan(ctx, cursor, pattern, cleanupBatch).Result()
			if err != nil {
				return fmt.Errorf("cluster: CleanupPrefix: SCAN on %s: %w", n.Options().Addr, err)
			}
			var mine []string
			for _, k := range keys {
				if strings.HasPrefix(k, prefix) { // belt and braces: MATCH is a glob
					mine = append(mine, k)
				}
			}
			if len(mine) > 0 {
				// A cluster node refuses a multi-key command whose keys span slots (CROSSSLOT),
				// even when it serves them all: one UNLINK per slot.
				for _, group := range bySlot(mine) {
					k, err := n.Unlink(ctx, group...).Result()
					if err != nil {
						return fmt.Errorf("cluster: CleanupPrefix: UNLINK on %s: %w", n.Options().Addr, err)
					}
					deleted.Add(k)
				}
			}
			cursor = next
			if cursor == 0 {
				return nil
			}
		}
	})
	return deleted.Load(), err
}

// bySlot groups keys by hash slot, in first-seen order.
func bySlot(keys []string) [][]string {
	idx := map[int]int{}
	var out [][]string
	for _, k := range keys {
		s := KeySlot(k)
		i, ok := idx[s]
		if !ok {
			i = len(out)
			idx[s] = i
			out = append(out, nil)
		}
		out[i] = append(out[i], k)
	}
	return out
}

// escapeGlob escapes the characters SCAN MATCH treats specially.
func escapeGlob(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\^`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
