package limiter_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"testing"

	"github.com/redis/go-redis/v9"

	"ratelab/limiter"
)

// redisReply is an error reply as go-redis surfaces an untyped one: a type with RedisError().
type redisReply string

func (e redisReply) Error() string { return string(e) }
func (redisReply) RedisError()     {}

// timeoutErr is a net.Error that says it timed out.
type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

func TestClassifyError(t *testing.T) {
	t.Parallel()
	wrap := func(err error) error { return fmt.Errorf("limiter: token bucket rl:{a}:b: %w", err) }
	tests := []struct {
		name string
		have error
		want limiter.ErrorKind
	}{
		{"nil", nil, limiter.KindOther},
		{"context deadline", context.DeadlineExceeded, limiter.KindTimeout},
		{"wrapped context deadline", wrap(context.DeadlineExceeded), limiter.KindTimeout},
		{"os deadline", os.ErrDeadlineExceeded, limiter.KindTimeout},
		{"pool timeout", redis.ErrPoolTimeout, limiter.KindTimeout},
		{"net read timeout", &net.OpError{Op: "read", Net: "tcp", Err: timeoutErr{}}, limiter.KindTimeout},
		{"moved", redisReply("MOVED 3999 127.0.0.1:6381"), limiter.KindMoved},
		{"wrapped moved", wrap(redisReply("MOVED 3999 127.0.0.1:6381")), limiter.KindMoved},
		{"ask", redisReply("ASK 3999 127.0.0.1:6381"), limiter.KindAsk},
		{"tryagain", redisReply("TRYAGAIN Multiple keys request during rehashing of slot"), limiter.KindTryAgain},
		{"clusterdown", redisReply("CLUSTERDOWN The cluster is down"), limiter.KindClusterDown},
		{"clusterdown hash slot", redisReply("CLUSTERDOWN Hash slot not served"), limiter.KindClusterDown},
		{"noscript raw", redisReply("NOSCRIPT No matching script. Please use EVAL."), limiter.KindNoScript},
		{"noscript go-redis", redis.ErrNoScript, limiter.KindNoScript},
		{"noscript sentinel wrapped", wrap(limiter.ErrNoScript), limiter.KindNoScript},
		{"ERR-prefixed moved (KVRocks)", redisReply("ERR MOVED 1 127.0.0.1:1"), limiter.KindMoved},
		{"other reply", redisReply("ERR wrong number of arguments"), limiter.KindOther},
		{"loading", redisReply("LOADING Redis is loading the dataset in memory"), limiter.KindOther},
		{"reply merely mentioning MOVED", redisReply("ERR not MOVED"), limiter.KindOther},
		{"plain MOVED text is not a reply", errors.New("MOVED 1 127.0.0.1:1"), limiter.KindOther},
		{"plain CLUSTERDOWN text is not a reply", errors.New("CLUSTERDOWN x"), limiter.KindOther},
		{"refused", &net.OpError{Op: "dial", Net: "tcp", Err: &os.SyscallError{Syscall: "connect", Err: syscall.ECONNREFUSED}}, limiter.KindConn},
		{"reset", wrap(syscall.ECONNRESET), limiter.KindConn},
		{"broken pipe", syscall.EPIPE, limiter.KindConn},
		{"eof", io.EOF, limiter.KindConn},
		{"unexpected eof", wrap(io.ErrUnexpectedEOF), limiter.KindConn},
		{"client closed", redis.ErrClosed, limiter.KindConn},
		{"net closed", net.ErrClosed, limiter.KindConn},
		{"bad reply", limiter.ErrBadReply, limiter.KindOther},
		{"noreplicas", redisReply("NOREPLICAS Not enough good replicas to write."), limiter.KindUnreplicated},
		{"noreplicas from a script", wrap(redisReply("NOREPLICAS Not enough good replicas to write. script: 8f1c, on @user_script:63.")), limiter.KindUnreplicated},
		{"unreplicated", wrap(limiter.ErrUnreplicated), limiter.KindUnreplicated},
		{"unreplicated wrapping the WAIT's timeout", fmt.Errorf("%w: WAIT 1 50: %w", limiter.ErrUnreplicated, os.ErrDeadlineExceeded), limiter.KindUnreplicated},
		{"plain NOREPLICAS text is not a reply", errors.New("NOREPLICAS x"), limiter.KindOther},
		{"canceled", context.Canceled, limiter.KindOther},
	}
	for _, tt := range tests {
		if have := limiter.ClassifyError(tt.have); have != tt.want {
			t.Errorf("%s: ClassifyError(%v) = %v, want %v", tt.name, tt.have, have, tt.want)
		}
	}
}

func TestErrorKindString(t *testing.T) {
	t.Parallel()
	want := []string{"timeout", "moved", "ask", "tryagain", "clusterdown", "noscript", "conn", "unreplicated", "other"}
	if limiter.NumErrorKinds != len(want) {
		t.Fatalf("NumErrorKinds = %d, want %d", limiter.NumErrorKinds, len(want))
	}
	for i, w := range want {
		if have := limiter.ErrorKind(i).String(); have != w {
			t.Errorf("ErrorKind(%d).String() = %q, want %q", i, have, w)
		}
	}
	if have := limiter.ErrorKind(200).String(); have != "other" {
		t.Errorf("ErrorKind(200).String() = %q, want %q", have, "other")
	}
}

// TestMayHaveDebited: a timeout, a connection that broke once the command could have been
// written and an allowed decision's short WAIT may have debited (or kept a debit that may be
// lost); a wait for a pooled connection, a refused or failed dial, a NOREPLICAS refusal (of
// the short WAIT's kind) and the other error replies did not.
func TestMayHaveDebited(t *testing.T) {
	t.Parallel()
	wrap := func(err error) error { return fmt.Errorf("limiter: token bucket rl:{a}:b: %w", err) }
	for _, c := range []struct {
		name string
		err  error
		want bool
	}{
		{"timeout", context.DeadlineExceeded, true},
		{"short WAIT of an allowed decision", fmt.Errorf("%w: WAIT 1 50 fell short", limiter.ErrUnreplicated), true},
		{"socket read timeout", wrap(&net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}), true},
		{"pool wait", wrap(redis.ErrPoolTimeout), false},
		{"reset after the write", wrap(&net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}), true},
		{"EOF after the write", wrap(io.EOF), true},
		{"refused", wrap(&net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}), false},
		{"dial timeout", wrap(&net.OpError{Op: "dial", Net: "tcp", Err: os.ErrDeadlineExceeded}), false},
		{"NOREPLICAS", redisReply("NOREPLICAS Not enough good replicas to write."), false},
		{"CLUSTERDOWN", redisReply("CLUSTERDOWN The cluster is down"), false},
		{"nil", nil, false},
	} {
		if got := limiter.MayHaveDebited(c.err); got != c.want {
			t.Errorf("%s: MayHaveDebited = %v, want %v", c.name, got, c.want)
		}
	}
}
