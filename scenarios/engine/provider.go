package engine

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"ratelab/scenarios"
	"ratelab/scenarios/cluster"
	"ratelab/scenarios/cluster/docker"
)

// openCluster starts a local or docker cluster, attaches to the one `ratelab cluster up` left
// running, or connects to an external one, as spec.Cluster.Provider says.
func openCluster(ctx context.Context, spec *scenarios.Spec, opts RunOptions, logf func(string, ...any)) (cluster.Cluster, error) {
	switch spec.Cluster.Provider {
	case "running":
		state := opts.StateFile
		if state == "" {
			state = cluster.DefaultStateFile()
		}
		cl, err := cluster.Attach(ctx, state)
		if err != nil {
			return nil, fmt.Errorf("cluster.provider running: %w (start one with `ratelab cluster up`)", err)
		}
		return cl, nil
	case "docker":
		logf("starting a Redis Cluster in Docker: %d primaries x %d replicas", spec.Cluster.Primaries, *spec.Cluster.Replicas)
		cl, err := docker.Start(ctx, docker.Options{Image: spec.Cluster.Image, Cluster: cluster.Options{
			Primaries:   spec.Cluster.Primaries,
			Replicas:    *spec.Cluster.Replicas,
			NodeTimeout: time.Duration(spec.Cluster.NodeTimeout),
			// As locally: a latency fault puts a proxy (in this process) before every node.
			Proxy: spec.HasFault(scenarios.FaultLatency),
			Logf:  logf,
		}})
		if err != nil {
			return nil, fmt.Errorf("cluster.provider docker: %w", err)
		}
		return cl, nil
	case "external":
		cfg, err := externalConfig(spec, opts)
		if err != nil {
			return nil, err
		}
		logf("connecting to the external Redis Cluster %s", cfg)
		cl, err := cluster.ConnectExternal(ctx, cfg)
		if err != nil {
			return nil, fmt.Errorf("cluster.provider external: %w", err)
		}
		return cl, nil
	}
	logf("starting a local Redis Cluster: %d primaries x %d replicas", spec.Cluster.Primaries, *spec.Cluster.Replicas)
	cl, err := cluster.StartLocal(ctx, cluster.Options{
		Primaries:   spec.Cluster.Primaries,
		Replicas:    *spec.Cluster.Replicas,
		NodeTimeout: time.Duration(spec.Cluster.NodeTimeout),
		// A latency fault needs every connection, replication included, through a proxy.
		Proxy: spec.HasFault(scenarios.FaultLatency),
		Logf:  logf,
	})
	if err != nil {
		return nil, err
	}
	return cl, nil
}

// externalConfig builds the connection settings of an external cluster from the spec's URL and
// the run options (password file, TLS files, --allow-faults). The password itself is read by
// ConnectExternal from the file or $RATELAB_REDIS_PASSWORD, never from the spec or argv.
func externalConfig(spec *scenarios.Spec, opts RunOptions) (cluster.ExternalConfig, error) {
	cfg, err := cluster.ParseExternal(spec.Cluster.URL)
	if err != nil {
		return cfg, fmt.Errorf("cluster.url: %w", err)
	}
	cfg.PasswordFile = opts.PasswordFile
	if opts.TLS != nil {
		t := *opts.TLS
		cfg.TLS = &t
	}
	cfg.AllowFaults = opts.AllowFaults
	return cfg, nil
}

// checkProviderFaults refuses, before anything starts, a spec whose faults the provider cannot
// or may not (external without --allow-faults) perform, instead of recording
// every fault as failed after the run.
func checkProviderFaults(spec *scenarios.Spec, opts RunOptions) error {
	var kinds []string
	for _, f := range spec.Faults {
		if !f.Kind.OnGateway() {
			kinds = append(kinds, string(f.Kind))
		}
	}
	if len(kinds) == 0 {
		return nil
	}
	switch spec.Cluster.Provider {
	case "external":
		if !opts.AllowFaults {
			return fmt.Errorf("faults %s: refused on external cluster %s: it may serve other traffic; "+
				"drop the scenario's cluster faults, or pass --allow-faults for a cluster you may break",
				strings.Join(kinds, ", "), cluster.RedactURL(spec.Cluster.URL))
		}
		// Allowed: faults sent as commands (reshard, failover, script-flush). Signals and the
		// latency proxy need the nodes' processes and network, which ratelab has no access to.
		var cannot []string
		for _, k := range kinds {
			switch k {
			case string(scenarios.FaultKillPrimary), string(scenarios.FaultPause), string(scenarios.FaultRestart), string(scenarios.FaultLatency):
				cannot = append(cannot, k)
			}
		}
		if len(cannot) > 0 {
			return fmt.Errorf("faults %s on external cluster %s: %w: ratelab cannot reach the nodes' processes or network there; use provider local or docker for them",
				strings.Join(cannot, ", "), cluster.RedactURL(spec.Cluster.URL), cluster.ErrUnsupported)
		}
		return nil
	}
	return nil
}

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
