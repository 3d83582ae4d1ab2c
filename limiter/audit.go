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

// auditSuffix ends every audit key. The audit key of endpoint e is the bucket key of an endpoint
// named e + auditSuffix, so endpoints must not end with it.
const auditSuffix = ":debited"

// AuditKey returns the audit counter of a tenant's endpoint: its bucket key (KeyFor) followed by
// ":debited". It shares the bucket key's hash tag, so it lives in the same slot and a script
// can write both atomically.
func AuditKey(tenant, endpoint string) string {
	return keyPrefix + tenant + "}:" + endpoint + auditSuffix
}

// checkAuditable refuses a request whose bucket key would be another endpoint's audit counter.
func checkAuditable(r Request) error {
	if strings.HasSuffix(r.Endpoint, auditSuffix) {
		return fmt.Errorf("%w: endpoint %q ends with %q, the audit counters' suffix (WithAudit): rename the endpoint", ErrBadRequest, r.Endpoint, auditSuffix)
	}
	return nil
}

// WithAudit makes RedisTokenBucket and CoalescingBucket count the tokens they debit: each
// allowed decision also adds its cost to the key's audit counter (AuditKey), in the same script
// run as the debit, so the counter is replicated (or lost in a failover) exactly with it. The
// counter lives AuditTTL after its last debit. Reading the counters after a fault
// (ReadDebited) and comparing them with the allowed costs the clients saw counts the debits
// the fault returned. The other limiters ignore this option.
func WithAudit() Option { return func(c *config) { c.audit = true } }

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
