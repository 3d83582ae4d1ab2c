//go:build faults

// Package image tests the ratelab container image that deploy/image/build.sh builds: the image
// the Kubernetes manifests run. It has no code of its own; the image is the product.
package image

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"ratelab/cluster"
	"ratelab/cluster/clustertest"
	"ratelab/results"
)

// TestImageRunsAScenario builds the image, checks `ratelab version` in it names the commit, and
// runs a short scenario from the container against a local cluster on the host's loopback
// (host network): the run directory it writes through a volume must hold a complete summary.
func TestImageRunsAScenario(t *testing.T) {
	image := buildImage(t)

	out := dockerRun(t, image, nil, "version")
	if !regexp.MustCompile(`commit\s+[0-9a-f]{12}`).MatchString(out) {
		t.Errorf("ratelab version in the image names no commit:\n%s", out)
	}

	l := clustertest.Start(t, cluster.Options{Primaries: 3, Replicas: 0})
	dir := t.TempDir()
	out = dockerRun(t, image, []string{"-v", dir + ":/results"},
		"run", "smoke", "--cluster", "redis://"+l.Addrs()[0], "--duration", "2s", "--out", "/results/smoke", "-q")
	b, err := os.ReadFile(filepath.Join(dir, "smoke", results.SummaryFile))
	if err != nil {
		t.Fatalf("the container's run wrote no summary: %v\n%s", err, out)
	}
	var sum results.Summary
	if err := json.Unmarshal(b, &sum); err != nil {
		t.Fatalf("summary.json: %v", err)
	}
	if sum.Load.Offered == 0 || sum.Outcomes.Allowed+sum.Outcomes.Denied != sum.Load.Offered {
		t.Errorf("offered %d, allowed %d + denied %d: every offered request of a light run is decided",
			sum.Load.Offered, sum.Outcomes.Allowed, sum.Outcomes.Denied)
	}
	if !strings.Contains(out, "report") {
		t.Errorf("the run printed no report line:\n%s", out)
	}
}

// buildImage builds the image with build.sh under a name of this test's own, removed when the
// test ends, and returns the name. It skips the test where no Docker engine answers, unless
// Docker is required.
func buildImage(t *testing.T) string {
	t.Helper()
	if err := exec.Command("docker", "info").Run(); err != nil {
		clustertest.SkipUnlessRequired(t, clustertest.RequireDocker, "no Docker engine answers `docker info`: "+err.Error())
	}
	image := fmt.Sprintf("ratelab:test-%d-%s", os.Getpid(), strings.ToLower(t.Name()))
	build := exec.Command("bash", "build.sh", image)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build.sh %s: %v\n%s", image, err, out)
	}
	t.Cleanup(func() { _ = exec.Command("docker", "rmi", "-f", image).Run() })
	return image
}

// dockerCmd is the command dockerRun runs: the image with args on the host's network as the
// calling user, with opts (volumes) before the image.
func dockerCmd(image string, opts []string, args ...string) *exec.Cmd {
	a := append([]string{"run", "--rm", "--network", "host", "--user", fmt.Sprintf("%d:%d", os.Getuid(), os.Getgid())}, opts...)
	a = append(a, image)
	return exec.Command("docker", append(a, args...)...)
}

// dockerRun runs the image with args on the host's network as the calling user (so that the
// files it writes into a volume can be removed by the test) and returns its combined output.
func dockerRun(t *testing.T, image string, opts []string, args ...string) string {
	t.Helper()
	c := dockerCmd(image, opts, args...)
	out, err := c.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(c.Args, " "), err, out)
	}
	return string(out)
}
