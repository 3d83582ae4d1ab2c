package limiter

// DecodeReply exposes decodeReply to the external test package.
var DecodeReply = decodeReply

// DecodeTimedReply exposes decodeTimedReply to the external test package.
var DecodeTimedReply = decodeTimedReply

// HeldTokens returns the lease limiter's running count of the tokens its leases hold, which
// OutstandingMax is the most of; at rest it must equal Outstanding, the scan.
func (l *LeaseLimiter) HeldTokens() int64 { return l.book.held.Load() }
