package limiter

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"syscall"

	"github.com/redis/go-redis/v9"
)

var (
	// ErrNoScript is the NOSCRIPT reply to EVALSHA: the node's script cache does not hold the
	// script (it was flushed, the node restarted, or a replica was promoted: Redis does not
	// replicate the cache). It is go-redis's own value, so errors.Is matches the client's errors.
	// RedisTokenBucket handles it with one EVAL and counts it; it reaches a caller only through
	// ClassifyError of a raw client error.
	ErrNoScript error = redis.ErrNoScript
	// ErrBadReply wraps a script reply whose shape or values break the script's contract.
	ErrBadReply = errors.New("limiter: bad reply from the token-bucket script")
	// ErrBadRequest wraps a Request no limiter can decide (negative cost, brace in the tenant,
	// time before the Unix epoch).
	ErrBadRequest = errors.New("limiter: bad request")
	// ErrBadConfig wraps a constructor argument or option that cannot work (invalid policy,
	// negative timeout, nil client).
	ErrBadConfig = errors.New("limiter: bad configuration")
	// ErrUnreplicated wraps the error of a decision whose script ran on the primary (its debit
	// counts there) but whose WAIT (WithDurability) answered fewer replicas than asked, or
	// failed: a failover may lose that debit. ClassifyError makes it KindUnreplicated.
	ErrUnreplicated = errors.New("limiter: debit not known replicated")
)

// ErrorKind is the class of a failed decision, the unit in which runs count errors.
type ErrorKind uint8

// The error kinds, in the order of the run summary's errors{} object.
const (
	// KindTimeout: the per-decision deadline passed (context deadline, socket timeout, pool wait).
	KindTimeout ErrorKind = iota
	// KindMoved: a MOVED redirection reached the caller (the slot lives on another node).
	KindMoved
	// KindAsk: an ASK redirection reached the caller (the slot is migrating).
	KindAsk
	// KindTryAgain: TRYAGAIN, a multi-key command during resharding.
	KindTryAgain
	// KindClusterDown: CLUSTERDOWN, the cluster cannot serve the slot.
	KindClusterDown
	// KindNoScript: NOSCRIPT, the node's script cache lacks the script.
	KindNoScript
	// KindConn: the connection failed (refused, reset, closed, EOF).
	KindConn
	// KindUnreplicated: the debit was made on the primary but is not known replicated: WAIT
	// (WithDurability) answered fewer replicas than asked within its timeout, or the primary
	// refused the write with NOREPLICAS (min-replicas-to-write).
	KindUnreplicated
	// KindOther: anything else, including a nil error.
	KindOther
)

// NumErrorKinds is the number of ErrorKind values; kinds index arrays [NumErrorKinds]T.
const NumErrorKinds = int(KindOther) + 1

var errorKindNames = [NumErrorKinds]string{
	"timeout", "moved", "ask", "tryagain", "clusterdown", "noscript", "conn", "unreplicated", "other",
}

// String returns the kind's name as it appears in summaries and CSV columns.
func (k ErrorKind) String() string {
	if int(k) < NumErrorKinds {
		return errorKindNames[k]
	}
	return "other"
}

// redisPrefixes maps the first word of a Redis error reply to its kind. go-redis's typed replies
// (*MovedError, *AskError, ...) are redis.Error values too, so the table covers them.
var redisPrefixes = [...]struct {
	prefix string
	kind   ErrorKind
}{
	{"MOVED ", KindMoved},
	{"ASK ", KindAsk},
	{"TRYAGAIN ", KindTryAgain},
	{"CLUSTERDOWN ", KindClusterDown},
	{"NOSCRIPT ", KindNoScript},
	{"NOREPLICAS ", KindUnreplicated},
}

// ClassifyError returns the kind of a decision error. It is the one place in ratelab that
// matches Redis error prefixes (MOVED, ASK, TRYAGAIN, CLUSTERDOWN, NOSCRIPT, NOREPLICAS); it sees
// through %w wrapping. Order: ErrUnreplicated first (it may wrap the WAIT's own failure), then
// timeouts (a timed-out read is also a net.OpError), then Redis error replies (values
// implementing redis.Error, found with errors.As; plain error text that merely starts with MOVED
// is not a reply), then connection failures, then other. A nil error is KindOther: check err
// first.
func ClassifyError(err error) ErrorKind {
	if err == nil {
		return KindOther
	}
	if errors.Is(err, ErrUnreplicated) {
		return KindUnreplicated
	}
	if isTimeout(err) {
		return KindTimeout
	}
	var rerr redis.Error
	if errors.As(err, &rerr) {
		msg := strings.TrimPrefix(rerr.Error(), "ERR ") // some servers (KVRocks) prefix ERR
		for _, p := range redisPrefixes {
			if strings.HasPrefix(msg, p.prefix) {
				return p.kind
			}
		}
		return KindOther
	}
	if isConnError(err) {
		return KindConn
	}
	return KindOther
}

// MayHaveDebited reports whether a failed decision call may still have debited its bucket: a
// timeout (the script may have run after the client gave up) or a WAIT short of its replicas
// (the script ran on the primary). A NOREPLICAS refusal, though KindUnreplicated too, debited
// nothing: the primary refused the script.
func MayHaveDebited(err error) bool {
	return errors.Is(err, ErrUnreplicated) || (err != nil && ClassifyError(err) == KindTimeout)
}

// isTimeout reports a deadline that passed anywhere between the caller and the socket.
func isTimeout(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) ||
		errors.Is(err, redis.ErrPoolTimeout) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// isConnError reports a connection that could not be made or broke.
func isConnError(err error) bool {
	for _, target := range [...]error{
		io.EOF, io.ErrUnexpectedEOF, net.ErrClosed, redis.ErrClosed,
		syscall.ECONNREFUSED, syscall.ECONNRESET, syscall.ECONNABORTED, syscall.EPIPE,
	} {
		if errors.Is(err, target) {
			return true
		}
	}
	var oe *net.OpError
	return errors.As(err, &oe)
}
