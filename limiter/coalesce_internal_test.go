package limiter

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestBatchSendSkipsExpiredCallsWithTheirError: a call whose deadline passed, or whose context
// ended, before its batch left is not sent, and its command carries why. Its caller may see done
// before its own timer (a select picks either ready case), so an empty command would read as a
// nil reply: a bad-reply ("other") error instead of a timeout. No client is needed: nothing is sent.
func TestBatchSendSkipsExpiredCallsWithTheirError(t *testing.T) {
	t.Parallel()
	b := &scriptBatcher{}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tt := range []struct {
		name     string
		ctx      context.Context
		deadline time.Time
		want     error
	}{
		{"deadline passed", context.Background(), time.Now().Add(-time.Millisecond), context.DeadlineExceeded},
		{"context cancelled", cancelled, time.Time{}, context.Canceled},
	} {
		c := &batchCall{ctx: tt.ctx, deadline: tt.deadline, cmd: redis.NewCmd(tt.ctx, "evalsha", "x", 1, "k"), done: make(chan struct{}, 1)}
		b.send(nil, []*batchCall{c})
		select {
		case <-c.done:
		default:
			t.Fatalf("%s: done not signalled", tt.name)
		}
		if _, err := c.cmd.Result(); !errors.Is(err, tt.want) {
			t.Errorf("%s: command result error %v, want %v", tt.name, err, tt.want)
		}
		if b.batches.Load() != 0 {
			t.Errorf("%s: %d batches sent, want none", tt.name, b.batches.Load())
		}
	}
}
