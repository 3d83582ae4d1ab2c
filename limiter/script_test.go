package limiter_test

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"ratelab/limiter"
	"ratelab/lua"
)

// luaCode returns the script without its comment lines.
func luaCode(src string) string {
	var b strings.Builder
	for line := range strings.Lines(src) {
		if !strings.HasPrefix(strings.TrimSpace(line), "--") {
			b.WriteString(line)
		}
	}
	return b.String()
}

// TestScriptContractText checks the parts of the script's contract that can be read from its
// text; its behaviour is tested against a real Redis by the suite and the property test.
func TestScriptContractText(t *testing.T) {
	t.Parallel()
	src := luaCode(lua.TokenBucket)
	tests := []struct {
		name string
		have bool
	}{
		{"has code", strings.Contains(src, "redis.call")},
		{"uses only KEYS[1] and KEYS[2]", len(regexp.MustCompile(`KEYS\[[^12]`).FindAllString(src, -1)) == 0},
		// The audit counter (WithAudit) is touched only when the caller passes it, on an allowed
		// decision that cost something, and gets the TTL limiter.AuditTTL says.
		{"writes KEYS[2] only when present and allowed", strings.Count(src, "KEYS[2],") == 2 &&
			regexp.MustCompile(`(?m)^if KEYS\[2\] ~= nil and allowed == 1 and cost > 0 then\n  redis\.call\('INCRBY', KEYS\[2\], [^\n]*\)\n  redis\.call\('PEXPIRE', KEYS\[2\], AUDIT_TTL_MS\)\nend$`).MatchString(src)},
		{"audit TTL is limiter.AuditTTL", strings.Contains(src, fmt.Sprintf("local AUDIT_TTL_MS = %d\n", limiter.AuditTTL.Milliseconds()))},
		{"builds no key names (no rl: prefix, no concatenation onto KEYS)", !strings.Contains(src, "rl:") && !regexp.MustCompile(`KEYS\[1\]\s*\.\.|\.\.\s*KEYS`).MatchString(src)},
		// The server clock is read once, and only when the caller asks for it (ARGV[6] "redis").
		{"reads the server clock only under ARGV[6]", strings.Count(src, "'TIME'") == 1 && !strings.Contains(src, `"TIME"`) &&
			regexp.MustCompile(`if ARGV\[6\] ~= 'redis' then\s+return redis\.error_reply\([^\n]*\)\s+end\s+local t = redis\.call\('TIME'\)`).MatchString(src)},
		{"stores the doubles themselves", strings.Contains(src, "struct.pack('<dd', tokens, now)") &&
			strings.Contains(src, "tokens, last = struct.unpack('<dd', state)")},
		// Top-level (unindented) calls run on every decision, allowed or denied: one SET with
		// the TTL, which a replica receives as one command.
		{"writes the key with its TTL unconditionally, once", strings.Count(src, "'SET'") == 1 && !strings.Contains(src, "'PEXPIRE', KEYS[1]") &&
			regexp.MustCompile(`(?m)^redis\.call\('SET', KEYS\[1\], struct\.pack\('<dd', tokens, now\), 'PX', ttl\)$`).MatchString(src)},
		{"reads ARGV 1 to 6 only", len(regexp.MustCompile(`ARGV\[[^1-6]`).FindAllString(src, -1)) == 0},
	}
	for _, tt := range tests {
		if !tt.have {
			t.Errorf("token_bucket.lua: %s: not so", tt.name)
		}
	}
}
