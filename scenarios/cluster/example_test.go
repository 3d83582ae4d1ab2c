package cluster_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"os/signal"

	"github.com/redis/go-redis/v9"

	"ratelab/scenarios/cluster"
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
