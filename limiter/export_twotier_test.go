package limiter

// DecodeTwoTierReply exposes decodeTwoTierReply to the external test package.
var DecodeTwoTierReply = decodeTwoTierReply
