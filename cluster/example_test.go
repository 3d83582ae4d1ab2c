package cluster_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"ratelab/cluster"
)

// Start a 3x1 cluster on free loopback ports, use it, and stop it on return or Ctrl-C. A SIGKILL
// of the program takes the nodes down too (Linux Pdeathsig).
func ExampleStartLocal() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	l, err := cluster.StartLocal(ctx, cluster.Options{})
	if err != nil {
		log.Fatal(err) // errors.Is(err, cluster.ErrRedisNotFound): run `make redis`
	}
	defer l.Close()

	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: l.Addrs()})
	defer rdb.Close()
	if err := rdb.Set(ctx, "rl:{tenant-1}:search", 1, 0).Err(); err != nil {
		log.Fatal(err)
	}
	for _, n := range l.Primaries() {
		fmt.Println(n.Addr, n.Role)
	}
}

// Delay one primary by 5 ms ± 1 ms in each direction (about 10 ms per round trip, replication
// included), then lift the fault.
func ExampleLocal_SetLatency() {
	ctx := context.Background()
	l, err := cluster.StartLocal(ctx, cluster.Options{Proxy: true})
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()
	target, err := l.PrimaryFor(cluster.KeySlot("rl:{tenant-1}:search"))
	if err != nil {
		log.Fatal(err)
	}
	if err := l.SetLatency(target.Addr, 5*time.Millisecond, time.Millisecond); err != nil {
		log.Fatal(err)
	}
	// ... run the load ...
	_ = l.SetLatency(target.Addr, 0, 0)
}

// Move 100 slots from the first primary to the second while a load runs: each slot stays
// migrating for 20 ms (ASK) and the next one starts 50 ms later (MOVED for those done).
func ExampleLocal_MigrateSlots() {
	ctx := context.Background()
	l, err := cluster.StartLocal(ctx, cluster.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()
	p := l.Primaries()
	res, err := l.MigrateSlots(ctx, 100, p[0].Addr, p[1].Addr,
		cluster.WithAskWindow(20*time.Millisecond), cluster.WithSlotPause(50*time.Millisecond))
	if err != nil {
		log.Fatal(err) // names the slot and the step
	}
	fmt.Println(len(res.Slots), "slots,", res.Keys, "keys moved")
}

// ParseExternal takes seeds and an ACL user from the URL; the password comes from
// $RATELAB_REDIS_PASSWORD or a file, and the config never prints it.
func ExampleParseExternal() {
	cfg, err := cluster.ParseExternal("rediss://ratelab@10.0.0.1:6379,10.0.0.2:6379")
	if err != nil {
		fmt.Println(err)
		return
	}
	cfg.Password = "from-the-environment"
	fmt.Println(cfg)
	_, err = cluster.ParseExternal("redis://ratelab:secret@10.0.0.1:6379")
	fmt.Println(err != nil, strings.Contains(err.Error(), "secret"))
	// Output:
	// rediss://ratelab@10.0.0.1:6379,10.0.0.2:6379 (password: set (redacted), tls: ca="" cert="" key="")
	// true false
}
