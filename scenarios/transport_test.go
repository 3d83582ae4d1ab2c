package scenarios

import (
	"strings"
	"testing"
)

// TestTransportValidation: limiter.transport is plain (the default) or coalesce, and coalesce
// applies to kind token-bucket only; errors name the field and the fix.
func TestTransportValidation(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, limiter, want string
	}{
		{"default", "{kind: token-bucket}", ""},
		{"coalesce", "{kind: token-bucket, transport: coalesce}", ""},
		{"unknown", "{kind: token-bucket, transport: pipelined}", `limiter.transport: "pipelined"`},
		{"lease", "{kind: lease, transport: coalesce}", "limiter.transport: coalesce"},
		{"gcra", "{kind: gcra, transport: coalesce}", "limiter.transport: coalesce"},
	} {
		// Parse validates.
		s, err := Parse("t", []byte("name: t\nload: {rate: 100}\ntenants: {count: 10}\npolicy: {rate: 10, burst: 20}\nlimiter: "+tt.limiter+"\n"))
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: %v, want valid", tt.name, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s: have %v, want an error containing %q", tt.name, err, tt.want)
		case tt.want == "" && err == nil && s.Limiter.Transport != TransportPlain && !strings.Contains(tt.limiter, "coalesce"):
			t.Errorf("%s: transport %q, want the default %q", tt.name, s.Limiter.Transport, TransportPlain)
		}
	}
}
