//go:build faults

package image

import (
	"bytes"
	"errors"
	"io"
	"regexp"
	"slices"
	"testing"

	"go.yaml.in/yaml/v3"
)

// job is the part of a Kubernetes Job that the distributed test runs.
type job struct {
	Kind     string `yaml:"kind"`
	Metadata struct {
		Name string `yaml:"name"`
	} `yaml:"metadata"`
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

// readJobs decodes the Jobs of a YAML stream (what `ratelab kubernetes` prints) by name: each
// one's completions and its one container's args.
func readJobs(t *testing.T, stream []byte) map[string]job {
	t.Helper()
	jobs := map[string]job{}
	dec := yaml.NewDecoder(bytes.NewReader(stream))
	for {
		var j job
		if err := dec.Decode(&j); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("%v\n%s", err, stream)
		}
		if j.Kind != "Job" {
			continue
		}
		if len(j.Spec.Template.Spec.Containers) != 1 {
			t.Fatalf("job %s: want one container", j.Metadata.Name)
		}
		jobs[j.Metadata.Name] = j
	}
	return jobs
}

var envRef = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

// podArgs is what the kubelet passes the pod: args with $(VAR) from vars, then each flag in set
// given set's value instead of the manifest's, and the flags in drop removed with their values.
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
