package clustertest

import (
	"os"
	"testing"
)

// RequireDocker names the variable that turns a missing Docker engine from a skip into a
// failure: CI sets it, since CI has Docker and the tests that need it must run there.
const RequireDocker = "RATELAB_REQUIRE_DOCKER"

// SkipUnlessRequired skips t for why (a peer such as Docker is missing), or fails it when the
// environment variable require is 1.
func SkipUnlessRequired(t testing.TB, require, why string) {
	t.Helper()
	if os.Getenv(require) == "1" {
		t.Fatalf("%s; %s=1 requires it", why, require)
	}
	t.Skipf("%s; set %s=1 to make this a failure", why, require)
}
