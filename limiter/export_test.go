package limiter

// DecodeReply exposes decodeReply to the external test package.
var DecodeReply = decodeReply
