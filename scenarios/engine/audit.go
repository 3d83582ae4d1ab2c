package engine

import (
	"context"
	"errors"

	"github.com/redis/go-redis/v9"

	"ratelab/limiter"
)

// kindUnreplicated stands for limiter.KindUnreplicated until the durability work lands.
const kindUnreplicated = limiter.ErrorKind(250)

// readDebited reads the debit audit of each key (limiter.ReadDebited once it lands).
func readDebited(ctx context.Context, c *redis.ClusterClient, keys []string) ([]int64, error) {
	return nil, errors.New("the debit audit is not available in this build")
}
