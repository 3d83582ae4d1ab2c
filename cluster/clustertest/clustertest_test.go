package clustertest_test

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"ratelab/cluster"
	"ratelab/cluster/clustertest"
)

// fatalTB records Fatalf/Skipf instead of ending the real test.
type fatalTB struct {
	testing.TB
	fatal, skip string
}

func (f *fatalTB) Helper() {}
func (f *fatalTB) Fatalf(format string, args ...any) {
	f.fatal = fmt.Sprintf(format, args...)
	runtime.Goexit()
}
func (f *fatalTB) Skipf(format string, args ...any) {
	f.skip = fmt.Sprintf(format, args...)
	runtime.Goexit()
}
func (f *fatalTB) Logf(string, ...any) {}

// A missing redis-server fails the test with install advice; it never skips.
func TestStartFailsWithAdvice(t *testing.T) {
	t.Parallel()
	f := &fatalTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		clustertest.Start(f, cluster.Options{RedisServer: "ratelab-no-such-redis-server", Dir: t.TempDir()})
	}()
	<-done
	if f.skip != "" {
		t.Errorf("Start skipped (%q); a missing redis-server must fail the test", f.skip)
	}
	if !strings.Contains(f.fatal, "make redis") {
		t.Errorf("Start failed with %q, want advice to run `make redis`", f.fatal)
	}
}
