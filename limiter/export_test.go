package limiter

// DecodeReply exposes decodeReply to the external test package.
var DecodeReply = decodeReply

// DecodeTimedReply exposes decodeTimedReply to the external test package.
var DecodeTimedReply = decodeTimedReply
