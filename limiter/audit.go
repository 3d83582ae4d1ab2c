package limiter

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// AuditTTL is how long an audit counter lives after the last debit it counted; the script sets
// it (AUDIT_TTL_MS in lua/token_bucket.lua) and a test holds the two equal. It must outlast a
// run: a counter that expired would read as tokens a fault returned.
const AuditTTL = time.Hour

// auditSuffix marks every audit key: the audit key of endpoint e is the bucket key of e followed
// by ":debited" and, for a named run, ":" and the run. Endpoints must not contain it, so no
// bucket key is an audit key, and (runs holding no ':') no two audit keys coincide.
const auditSuffix = ":debited"

// MaxAuditRunLen is the longest run name WithAudit takes.
const MaxAuditRunLen = 64

// AuditKey returns run's audit counter of a tenant's endpoint: its bucket key (KeyFor) followed
// by ":debited", and by ":" + run when run is not "" (WithAudit). It shares the bucket key's hash
// tag, so it lives in the same slot and a script can write both atomically.
func AuditKey(tenant, endpoint, run string) string {
	if run == "" {
		return keyPrefix + tenant + "}:" + endpoint + auditSuffix
	}
	return keyPrefix + tenant + "}:" + endpoint + auditSuffix + ":" + run // one allocation
}

// checkAuditable refuses a request whose bucket key could be an audit counter.
func checkAuditable(r Request) error {
	if strings.Contains(r.Endpoint, auditSuffix) {
		return fmt.Errorf("%w: endpoint %q contains %q, the audit counters' mark (WithAudit): rename the endpoint", ErrBadRequest, r.Endpoint, auditSuffix)
	}
	return nil
}

// checkAuditRun reports a run name WithAudit cannot key counters by.
func checkAuditRun(run string) error {
	if len(run) > MaxAuditRunLen {
		return fmt.Errorf("%w: audit run %q: %d bytes, at most %d", ErrBadConfig, run, len(run), MaxAuditRunLen)
	}
	for _, c := range []byte(run) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return fmt.Errorf("%w: audit run %q: byte %q; use letters, digits, '-', '_' and '.'", ErrBadConfig, run, c)
		}
	}
	return nil
}

// WithAudit makes RedisTokenBucket and CoalescingBucket count the tokens they debit: each
// allowed decision also adds its cost to the key's audit counter (AuditKey(tenant, endpoint,
// run)), in the same script call as the debit, so the counter is replicated (or lost in a
// failover) exactly with it. The counter lives AuditTTL after its last debit. Reading the
// counters after a fault (ReadDebited) and comparing them with the allowed costs the clients saw
// counts the debits the fault returned.
//
// run names the counters' owner: runs with different names count in different keys, so a run on
// a cluster an earlier run used (within AuditTTL) does not read that run's debits as its own. ""
// counts in the one unnamed counter per key. A name holds at most MaxAuditRunLen letters,
// digits, '-', '_' and '.'. The other limiters ignore this option.
func WithAudit(run string) Option {
	return func(c *config) { c.audit, c.auditRun = true, run }
}

// readDebitedBatch is how many GETs ReadDebited sends per pipeline.
const readDebitedBatch = 512

// ReadDebited returns the audit counters of keys (AuditKey values), in order; a key that does
// not exist reads 0. It sends GETs in pipelines through c: a ClusterClient built without
// ReadOnly sends each to its slot's current primary, so the counts are those a failover kept.
// An error names the first key that failed.
func ReadDebited(ctx context.Context, c redis.UniversalClient, keys []string) ([]int64, error) {
	out := make([]int64, len(keys))
	cmds := make([]*redis.StringCmd, 0, min(len(keys), readDebitedBatch))
	for start := 0; start < len(keys); start += readDebitedBatch {
		end := min(start+readDebitedBatch, len(keys))
		pipe := c.Pipeline()
		cmds = cmds[:0]
		for _, k := range keys[start:end] {
			cmds = append(cmds, pipe.Get(ctx, k))
		}
		_, _ = pipe.Exec(ctx)
		for i, cmd := range cmds {
			s, err := cmd.Result()
			if errors.Is(err, redis.Nil) {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("limiter: read audit counter %s: %w", keys[start+i], err)
			}
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("limiter: read audit counter %s: %q is not an integer: %w", keys[start+i], s, err)
			}
			out[start+i] = n
		}
	}
	return out, nil
}
