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
	// ErrUnreplicated wraps the error of an allowed decision whose script ran on the primary
	// (its debit counts there) but whose WAIT (WithDurability) answered fewer replicas than
	// asked, or failed: a failover may lose that debit, so the store does not vouch for the
	// allowance and a fail policy decides. ClassifyError makes it KindUnreplicated; the store may
	// have debited (MayHaveDebited). A denial whose WAIT falls short is no error: it debited
	// nothing, and stands (Decision.Unreplicated).
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
	// KindUnreplicated: the debit is not known replicated: an allowed decision's WAIT
	// (WithDurability) answered fewer replicas than asked (ErrUnreplicated: the script ran), or
	// the primary refused the write with NOREPLICAS (min-replicas-to-write: it did not).
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
	var re *RemoteError
	if errors.As(err, &re) {
		return re.Kind
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

// MayHaveDebited reports whether a failed decision call may still have debited its bucket, or
// whether its debit may survive: the command may have reached the primary and run there although
// its answer never came back — a timeout once the command could have been written (not a wait
// for a pooled connection, which sends nothing), a connection that broke after it could have
// been written (reset, EOF, a closed connection — not a refused or failed dial) — or it ran and
// its WAIT fell short (ErrUnreplicated: the debit stands on the primary and may or may not
// survive a failover). A Redis error reply (NOREPLICAS, MOVED, CLUSTERDOWN...) means the script
// did not run: nothing was debited.
func MayHaveDebited(err error) bool {
	var re *RemoteError
	if errors.As(err, &re) {
		return re.MayHaveDebited
	}
	if err == nil || neverSent(err) {
		return false
	}
	if errors.Is(err, ErrUnreplicated) {
		return true
	}
	k := ClassifyError(err)
	return k == KindTimeout || k == KindConn
}

// neverSent reports a failure that happened before any command could be written: a wait for a
// pooled connection, a refused connection or a failed dial.
func neverSent(err error) bool {
	if errors.Is(err, redis.ErrPoolTimeout) || errors.Is(err, syscall.ECONNREFUSED) {
		return true
	}
	var oe *net.OpError
	return errors.As(err, &oe) && oe.Op == "dial"
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

// RemoteError is a failure classified where it happened, and reported from there: an HTTP
// gateway's 503 with its failure headers, or a client's failed request to one. ClassifyError
// and MayHaveDebited read its fields, so a driver that learns of a failure over the wire
// classifies it as one that saw it in process.
type RemoteError struct {
	Kind           ErrorKind
	MayHaveDebited bool
	// Msg says what was seen (the status, the transport's error).
	Msg string
}

func (e *RemoteError) Error() string { return e.Msg }
