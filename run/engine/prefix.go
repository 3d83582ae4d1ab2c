package engine

import (
	"context"
	"errors"
	"fmt"
	"ratelab/cluster"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// runKeyPrefix returns the prefix of every key of an external run: the run id is the run
// directory's base name with characters KeyPrefix refuses replaced by '-'.
func runKeyPrefix(dir string) (string, error) {
	base := dir
	if i := strings.LastIndexAny(base, `/\`); i >= 0 {
		base = base[i+1:]
	}
	id := []byte(base)
	for i, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			id[i] = '-'
		}
	}
	if len(id) > 48 {
		id = id[len(id)-48:]
	}
	// A nanosecond suffix keeps two runs into the same directory from sharing keys.
	return cluster.KeyPrefix(string(id) + "-" + strconv.FormatInt(time.Now().UnixNano()%1e12, 36))
}

// prefixHook prepends a run's key prefix to every key a command sent through the cluster client
// names, before the client hashes it to a slot: the prefix has no braces, so each key keeps its
// hash tag and its slot, and the limiters need not know they run on a shared cluster. Commands
// whose keys it cannot find are refused rather than sent unprefixed.
type prefixHook struct{ prefix string }

func (h prefixHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h prefixHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if err := h.rewrite(cmd); err != nil {
			cmd.SetErr(err)
			return err
		}
		return next(ctx, cmd)
	}
}

func (h prefixHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			if err := h.rewrite(cmd); err != nil {
				cmd.SetErr(err)
				return err
			}
		}
		return next(ctx, cmds)
	}
}

// errUnprefixed is returned for a keyed command the hook does not know how to prefix.
var errUnprefixed = errors.New("external run: command not supported by the key prefixer")

// keyless are the commands the engine sends through the cluster client that name no key.
var keyless = map[string]bool{
	"ping": true, "script": true, "cluster": true, "info": true, "command": true, "hello": true,
	"readonly": true, "function": true, "time": true,
}

// rewrite prefixes the keys of cmd in place (idempotent: a key already prefixed is left alone,
// so a command processed twice keeps one prefix).
func (h prefixHook) rewrite(cmd redis.Cmder) error {
	args := cmd.Args()
	name := strings.ToLower(cmd.Name())
	var first, last int // key positions [first, last)
	switch name {
	case "eval", "evalsha", "eval_ro", "evalsha_ro", "fcall", "fcall_ro":
		if len(args) < 3 {
			return nil
		}
		n, err := strconv.Atoi(fmt.Sprint(args[2]))
		if err != nil || n < 0 || 3+n > len(args) {
			return fmt.Errorf("%w: %s with numkeys %v", errUnprefixed, name, args[2])
		}
		first, last = 3, 3+n
	case "get", "set", "pttl", "ttl", "hgetall", "hget", "zcard", "incr", "incrby", "expire", "pexpire", "type":
		first, last = 1, min(2, len(args))
	case "del", "unlink", "exists", "mget", "touch":
		first, last = 1, len(args)
	default:
		if keyless[name] {
			return nil
		}
		return fmt.Errorf("%w: %s", errUnprefixed, name)
	}
	for i := first; i < last; i++ {
		k, ok := args[i].(string)
		if !ok {
			return fmt.Errorf("%w: %s key of type %T", errUnprefixed, name, args[i])
		}
		if !strings.HasPrefix(k, h.prefix) {
			args[i] = h.prefix + k
		}
	}
	return nil
}
