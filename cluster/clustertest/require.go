package clustertest

import (
	"os"
	"testing"
)

// RequireDocker and RequireBrowser name the variables that turn a missing Docker engine or
// headless Chromium from a skip into a failure: CI sets both, since CI has both and the tests
// that need them must run there.
const (
	RequireDocker  = "RATELAB_REQUIRE_DOCKER"
	RequireBrowser = "RATELAB_REQUIRE_BROWSER"
)

// SkipUnlessRequired skips t for why (a peer such as Docker is missing), or fails it when the
// environment variable require is 1.
func SkipUnlessRequired(t testing.TB, require, why string) {
	t.Helper()
	if os.Getenv(require) == "1" {
		t.Fatalf("%s; %s=1 requires it", why, require)
	}
	t.Skipf("%s; set %s=1 to make this a failure", why, require)
}
