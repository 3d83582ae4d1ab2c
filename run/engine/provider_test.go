package engine

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"ratelab/cluster"
	"ratelab/cluster/clustertest"
	"ratelab/cluster/docker"
	"ratelab/scenarios"
)

func TestSpecClusterProviders(t *testing.T) {
	t.Parallel()
	ok := func(provider scenarios.ClusterProvider, url, image string) *scenarios.Spec {
		s := testSpec(t, "token-bucket", 100, time.Second)
		s.Cluster.Provider, s.Cluster.URL, s.Cluster.Image = provider, url, image
		return s
	}
	for _, s := range []*scenarios.Spec{ok("external", "redis://app@127.0.0.1:7000,127.0.0.1:7001", ""), ok("docker", "", "redis:7.2"), ok("docker", "", "")} {
		if err := s.Validate(); err != nil {
			t.Errorf("provider %s url %q image %q: %v", s.Cluster.Provider, s.Cluster.URL, s.Cluster.Image, err)
		}
	}
	bad := []struct {
		s    *scenarios.Spec
		want string
	}{
		{ok("external", "", ""), "cluster.url"},
		{ok("external", "redis://app:pw-in-url@h:1", ""), "the URL holds a password"},
		{ok("local", "redis://h:1", ""), "only provider external takes a URL"},
		{ok("external", "redis://h:1", "redis:7"), "only provider docker runs an image"},
		{ok("k8s", "", ""), "use local, running, docker or external"},
	}
	for _, b := range bad {
		err := b.s.Validate()
		if err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("provider %s url %q image %q: %v, want an error containing %q", b.s.Cluster.Provider, b.s.Cluster.URL, b.s.Cluster.Image, err, b.want)
		}
		if err != nil && strings.Contains(err.Error(), "pw-in-url") {
			t.Errorf("validation error prints the URL's password: %v", err)
		}
	}
}

// TestExternalRunRefusesFaults: a scenario with cluster faults is refused on an external
// cluster before any connection is made, naming --allow-faults; gateway faults are no threat to
// the cluster and pass the check; docker takes latency faults (its nodes get proxies too).
func TestExternalRunRefusesFaults(t *testing.T) {
	t.Parallel()
	s := testSpec(t, "token-bucket", 100, 2*time.Second)
	s.Cluster.Provider, s.Cluster.URL = "external", "redis://127.0.0.1:1" // nothing listens there
	s.Faults = []scenarios.FaultSpec{{At: scenarios.Duration(time.Second), Kind: scenarios.FaultPause, For: scenarios.Duration(100 * time.Millisecond)}}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	_, err := Run(context.Background(), s, Options{Out: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "--allow-faults") || !strings.Contains(err.Error(), "pause") {
		t.Fatalf("external run with a pause fault: %v, want a refusal naming the fault and --allow-faults", err)
	}
	if err := checkProviderFaults(s, Options{AllowFaults: true}); !errors.Is(err, cluster.ErrUnsupported) {
		t.Errorf("external pause with --allow-faults: %v, want ErrUnsupported (no access to the nodes)", err)
	}
	s.Faults = []scenarios.FaultSpec{{At: scenarios.Duration(time.Second), Kind: scenarios.FaultClockSkew, Offset: scenarios.Duration(time.Millisecond), For: scenarios.Duration(time.Second)}}
	if err := checkProviderFaults(s, Options{}); err != nil {
		t.Errorf("gateway fault on an external cluster: %v, want it allowed", err)
	}
	d := testSpec(t, "token-bucket", 100, 2*time.Second)
	d.Cluster.Provider = "docker"
	d.Faults = []scenarios.FaultSpec{{At: scenarios.Duration(time.Second), Kind: scenarios.FaultLatency, Delay: scenarios.Duration(time.Millisecond), For: scenarios.Duration(time.Second)}}
	if err := checkProviderFaults(d, Options{}); err != nil {
		t.Errorf("docker latency fault: %v, want it allowed (docker nodes get latency proxies)", err)
	}
}

func TestPrefixHookRewritesKeysOnce(t *testing.T) {
	t.Parallel()
	h := prefixHook{prefix: "ratelab:r1:"}
	cmd := redis.NewCmd(context.Background(), "evalsha", "abc", 2, "rl:{t}:a", "rl:{t}:b", "argv-not-a-key")
	for range 2 { // a second pass (a re-processed command) must not prefix again
		if err := h.rewrite(cmd); err != nil {
			t.Fatal(err)
		}
	}
	args := cmd.Args()
	if args[3] != "ratelab:r1:rl:{t}:a" || args[4] != "ratelab:r1:rl:{t}:b" || args[5] != "argv-not-a-key" {
		t.Errorf("args %v: want both keys prefixed once and ARGV untouched", args)
	}
	if cluster.KeySlot(args[3].(string)) != cluster.KeySlot("rl:{t}:a") {
		t.Errorf("prefixed key %s moved to another slot", args[3])
	}
	if err := h.rewrite(redis.NewCmd(context.Background(), "rename", "a", "b")); !errors.Is(err, errUnprefixed) {
		t.Errorf("unknown keyed command: %v, want errUnprefixed (never sent unprefixed)", err)
	}
}

// TestExternalRun runs a scenario against a separately started cluster with requirepass, as an
// external cluster given by URL with the password in $RATELAB_REDIS_PASSWORD: the run succeeds,
// its summary holds no password, and afterwards the cluster holds none of the run's keys while a
// key of someone else survives.
func TestExternalRun(t *testing.T) {
	// Not parallel: t.Setenv.
	l := clustertest.Start(t, cluster.Options{Primaries: 2, Replicas: 0, RequirePass: true})
	pw := l.Password()
	t.Setenv(cluster.PasswordEnv, pw)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	admin := redis.NewClusterClient(l.ClientOptions())
	defer admin.Close()
	const foreign = "rl:{tenant-0}:read" // what an unprefixed run would write: it must stay untouched
	if err := admin.Set(ctx, foreign, "someone-else", time.Hour).Err(); err != nil {
		t.Fatal(err)
	}

	s := testSpec(t, "token-bucket", 400, 2*time.Second)
	s.Cluster.Provider, s.Cluster.URL = "external", "redis://"+l.Addrs()[0]
	s.Limiter.Timeout = scenarios.Duration(time.Second) // a loaded CI machine under -race
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	res, err := Run(ctx, s, Options{Out: dir})
	if err != nil {
		t.Fatalf("external run: %v", err)
	}
	sum := res.Summary
	if sum.Environment.Provider != "external" || sum.Environment.Primaries != 2 {
		t.Errorf("environment %+v: want provider external with 2 primaries", sum.Environment)
	}
	if sum.Outcomes.Allowed == 0 || sum.Outcomes.Denied == 0 {
		t.Errorf("outcomes %+v: want both allowed and denied", sum.Outcomes)
	}
	if !strings.Contains(sum.Load.Note, "keys prefixed ratelab:") || strings.Contains(sum.Load.Note, " 0 deleted") {
		t.Errorf("note %q: want the run's prefix and the keys it deleted", sum.Load.Note)
	}
	for _, f := range []string{"summary.json", "scenario.yaml", "timeseries.csv"} {
		b, err := os.ReadFile(dir + "/" + f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), pw) {
			t.Errorf("%s holds the cluster's password", f)
		}
	}
	err = admin.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error {
		keys, err := n.Keys(ctx, "*").Result()
		for _, k := range keys {
			if k != foreign {
				t.Errorf("key %q left on %s after the run", k, n.Options().Addr)
			}
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if v, err := admin.Get(ctx, foreign).Result(); err != nil || v != "someone-else" {
		t.Errorf("foreign key %s: %q, %v; want it untouched", foreign, v, err)
	}
}

// TestDockerRun runs a short scenario with provider docker on a locally built FROM-scratch image
// (no registry needed); it skips without a Docker engine (fails where RATELAB_REQUIRE_DOCKER=1).
func TestDockerRun(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	img, err := docker.BuildLocalImage(ctx, "", "")
	if errors.Is(err, docker.ErrNoDocker) {
		clustertest.SkipUnlessRequired(t, clustertest.RequireDocker, "provider docker needs a Docker engine: "+err.Error())
	}
	if err != nil {
		t.Fatalf("build a redis image from the installed redis-server: %v", err)
	}
	// 600/s: the hottest bucket (tenant-0's read, ~12% of the requests) gets ~140 requests in
	// 2 s, well over its 40 burst + 40 refilled, so some are denied.
	s := testSpec(t, "token-bucket", 600, 2*time.Second)
	s.Cluster.Provider, s.Cluster.Image = "docker", img
	s.Limiter.Timeout = scenarios.Duration(time.Second)
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	res, err := Run(ctx, s, Options{Out: t.TempDir(), Logf: t.Logf})
	if err != nil {
		t.Fatalf("docker run: %v", err)
	}
	sum := res.Summary
	t.Logf("docker run: outcomes %+v, central %+v, hot keys %+v, errors %+v", sum.Outcomes, sum.Central, sum.HotKeys, sum.Errors)
	if sum.Environment.Provider != "docker" || sum.Environment.Primaries != 2 || !strings.HasPrefix(sum.Environment.RedisVersion, "7.") {
		t.Errorf("environment %+v: want provider docker, 2 primaries, Redis 7", sum.Environment)
	}
	if sum.Outcomes.Allowed == 0 || sum.Outcomes.Denied == 0 {
		t.Errorf("outcomes %+v: want both allowed and denied", sum.Outcomes)
	}
	if sum.Central.Ops < sum.Load.Completed {
		t.Errorf("central ops %d < decisions %d: every decision goes to the containers", sum.Central.Ops, sum.Load.Completed)
	}
}
