package limiter

import (
	"crypto/sha1"
	"encoding/hex"

	"github.com/redis/go-redis/v9"

	"ratelab/lua"
)

// decisionScript is one script whose runs make or refill decisions: its body, sent by EVAL, and
// its SHA1 in lowercase hex, sent by EVALSHA.
type decisionScript struct{ sha, src string }

// shaLen is the length of a SHA1 in hex.
const shaLen = 40

// decisionScripts are every script of package lua: each run of one is a decision (or a lease
// fetch, which refills many).
var decisionScripts = func() []decisionScript {
	var out []decisionScript
	for _, src := range []string{lua.TokenBucket, lua.Lease, lua.FixedWindow, lua.GCRA, lua.SlidingWindow, lua.SlidingLog, lua.TwoTier} {
		out = append(out, decisionScript{sha: redis.NewScript(src).Hash(), src: src})
	}
	return out
}()

// IsDecisionCommand reports whether cmd is a command that makes or refills decisions: EVALSHA of
// one of the limiter's scripts by its SHA1 (as every limiter here sends it, lowercase hex), or
// EVAL of its body (the retry after NOSCRIPT). That covers a decision's script call, its NOSCRIPT
// retry and a lease fetch (refresh-ahead included), whichever limiter, transport or pipeline sent
// it. Everything else the limiter or go-redis sends is not one: SCRIPT LOAD, PING, CLUSTER SLOTS,
// ASKING, and scripts that are not the limiter's.
//
// It is meant for go-redis hooks on the per-node clients (ClusterClient.OnNewNode), which see
// each command a node receives, a redirected one once per node: call it on the command of a
// ProcessHook and on each command of a ProcessPipelineHook. It reads only the command itself,
// because the context is no guide: a coalesced or batched pipeline carries the context of one
// of its requests for all of them, go-redis sends CLUSTER SLOTS and ASKING under the caller's
// context, and a refresh-ahead fetch runs under none. It allocates nothing, and is safe for
// concurrent use.
func IsDecisionCommand(cmd redis.Cmder) bool {
	args := cmd.Args()
	if len(args) < 2 {
		return false
	}
	payload, ok := args[1].(string)
	if !ok {
		return false
	}
	switch cmd.Name() {
	case "evalsha":
		if len(payload) != shaLen {
			return false
		}
		for i := range decisionScripts {
			// The first byte rules out nearly every other script without a call to compare.
			if sha := decisionScripts[i].sha; payload[0] == sha[0] && payload == sha {
				return true
			}
		}
		return payload == redisRateAllowNSHA
	case "eval":
		for i := range decisionScripts {
			if payload == decisionScripts[i].src {
				return true
			}
		}
		return len(payload) == redisRateAllowNLen && sha1Hex(payload) == redisRateAllowNSHA
	}
	return false
}

// redisRateAllowNSHA and redisRateAllowNLen identify the script go-redis/redis_rate v10.0.1 runs
// for AllowN (RedisRate): its SHA1 and its length, checked against the module by
// TestRedisRateScriptIsCounted. Its source stays in the module; only its EVAL (after NOSCRIPT)
// pays for a SHA1, and only when the length matches.
const (
	redisRateAllowNSHA = "f52a5b566060d79fd321d695df55bc918339c4aa"
	redisRateAllowNLen = 1718
)

// sha1Hex is the lowercase hex SHA1 of s, as EVALSHA names a script.
func sha1Hex(s string) string {
	h := sha1.Sum([]byte(s))
	return hex.EncodeToString(h[:])
}
