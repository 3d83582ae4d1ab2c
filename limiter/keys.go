package limiter

// keyPrefix starts every bucket key. The tenant sits inside {} so that Redis Cluster hashes only
// the tenant: all endpoints of a tenant live in one slot (and one node).
const keyPrefix = "rl:{"

// KeyFor returns the bucket key of a tenant's endpoint: "rl:{" + tenant + "}:" + endpoint.
// The tenant must not contain '{' or '}' (Allow refuses such a request): a brace would move the
// hash tag and could make two (tenant, endpoint) pairs share one key.
func KeyFor(tenant, endpoint string) string {
	return keyPrefix + tenant + "}:" + endpoint // one allocation, whatever the lengths
}

// AppendKey appends the bucket key of a tenant's endpoint to dst and returns the extended
// buffer: the allocation-free form of KeyFor for hot paths that own a scratch buffer.
func AppendKey(dst []byte, tenant, endpoint string) []byte {
	dst = append(dst, keyPrefix...)
	dst = append(dst, tenant...)
	dst = append(dst, "}:"...)
	return append(dst, endpoint...)
}

// KeyLen is len(KeyFor(tenant, endpoint)), computed without building the key.
func KeyLen(tenant, endpoint string) int {
	return len(keyPrefix) + len(tenant) + len("}:") + len(endpoint)
}
