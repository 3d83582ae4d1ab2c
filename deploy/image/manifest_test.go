//go:build faults

package image

import (
	"os"
	"regexp"
	"slices"
	"testing"

	"go.yaml.in/yaml/v3"
)

// job is the part of a Kubernetes Job in deploy/kubernetes that the distributed test runs.
type job struct {
	Spec struct {
		Completions int `yaml:"completions"`
		Template    struct {
			Spec struct {
				Containers []struct {
					Args []string `yaml:"args"`
				} `yaml:"containers"`
			} `yaml:"spec"`
		} `yaml:"template"`
	} `yaml:"spec"`
}

// readJob reads the Job in deploy/kubernetes/file: its completions and its container's args.
func readJob(t *testing.T, file string) (int, []string) {
	t.Helper()
	b, err := os.ReadFile("../kubernetes/" + file)
	if err != nil {
		t.Fatal(err)
	}
	var j job
	if err := yaml.Unmarshal(b, &j); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	if c := j.Spec.Template.Spec.Containers; len(c) == 1 {
		return j.Spec.Completions, c[0].Args
	}
	t.Fatalf("%s: want one container", file)
	return 0, nil
}

var envRef = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

// podArgs is what the kubelet passes the pod: args with $(VAR) from vars, then each flag in set
// given set's value instead of the manifest's (the cluster, a light load), and the flags in
// drop removed with their values.
func podArgs(t *testing.T, args []string, vars, set map[string]string, drop ...string) []string {
	t.Helper()
	var out []string
	for i := 0; i < len(args); i++ {
		a := envRef.ReplaceAllStringFunc(args[i], func(m string) string {
			v, ok := vars[envRef.FindStringSubmatch(m)[1]]
			if !ok {
				t.Fatalf("arg %q: no value for %s", args[i], m)
			}
			return v
		})
		if v, ok := set[a]; ok && i+1 < len(args) {
			out, i = append(out, a, v), i+1
			continue
		}
		if slices.Contains(drop, a) && i+1 < len(args) {
			i++
			continue
		}
		out = append(out, a)
	}
	return out
}
