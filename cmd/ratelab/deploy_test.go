package main

import (
	"bytes"
	"errors"
	"io"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	"ratelab/results"
)

// k8sJob is the part of a batch/v1 Job the manifest test reads.
type k8sJob struct {
	Kind     string `yaml:"kind"`
	Metadata struct {
		Name string `yaml:"name"`
	} `yaml:"metadata"`
	Spec struct {
		CompletionMode string `yaml:"completionMode"`
		Completions    int    `yaml:"completions"`
		Parallelism    int    `yaml:"parallelism"`
		Template       struct {
			Spec struct {
				Containers []k8sContainer `yaml:"containers"`
				Volumes    []struct {
					Name string `yaml:"name"`
					PVC  struct {
						ClaimName string `yaml:"claimName"`
					} `yaml:"persistentVolumeClaim"`
				} `yaml:"volumes"`
			} `yaml:"spec"`
		} `yaml:"template"`
	} `yaml:"spec"`
}

type k8sContainer struct {
	Command []string `yaml:"command"`
	Args    []string `yaml:"args"`
	Env     []struct {
		Name      string `yaml:"name"`
		Value     string `yaml:"value"`
		ValueFrom struct {
			FieldRef *struct {
				FieldPath string `yaml:"fieldPath"`
			} `yaml:"fieldRef"`
			SecretKeyRef *struct {
				Name string `yaml:"name"`
				Key  string `yaml:"key"`
			} `yaml:"secretKeyRef"`
			ConfigMapKeyRef *struct {
				Name string `yaml:"name"`
				Key  string `yaml:"key"`
			} `yaml:"configMapKeyRef"`
		} `yaml:"valueFrom"`
	} `yaml:"env"`
}

// generateJobs runs `ratelab kubernetes` with args and decodes the Jobs it prints, by name;
// the output must be valid YAML.
func generateJobs(t *testing.T, args ...string) map[string]k8sJob {
	t.Helper()
	root := newRootCmd()
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs(append([]string{"kubernetes"}, args...))
	if err := root.Execute(); err != nil {
		t.Fatalf("ratelab kubernetes %v: %v: %s", args, err, errOut.String())
	}
	jobs := map[string]k8sJob{}
	dec := yaml.NewDecoder(bytes.NewReader(out.Bytes()))
	for {
		var j k8sJob
		if err := dec.Decode(&j); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("ratelab kubernetes %v: %v\n%s", args, err, out.String())
		}
		if j.Kind == "Job" {
			jobs[j.Metadata.Name] = j
		}
	}
	return jobs
}

var envRef = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

// expand substitutes $(VAR) as the kubelet does, from the container's env; vars from the
// downward API take the sample value given.
func expand(t *testing.T, c k8sContainer, index string) []string {
	t.Helper()
	vals := map[string]string{}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom.FieldRef != nil:
			vals[e.Name] = index
		case e.ValueFrom.SecretKeyRef == nil && e.ValueFrom.ConfigMapKeyRef == nil:
			vals[e.Name] = e.Value
		}
	}
	out := make([]string, len(c.Args))
	for i, a := range c.Args {
		out[i] = envRef.ReplaceAllStringFunc(a, func(m string) string {
			name := envRef.FindStringSubmatch(m)[1]
			v, ok := vals[name]
			if !ok {
				t.Errorf("arg %q uses $(%s), which the container's env does not define: the kubelet would pass it literally", a, name)
			}
			return v
		})
	}
	return out
}

// parseArgs parses args as ratelab would and returns the subcommand, or fails the test when a
// flag does not exist, a value does not parse, or the positional arguments are wrong.
func parseArgs(t *testing.T, job string, args []string) *cobra.Command {
	t.Helper()
	if len(args) == 0 {
		t.Fatalf("job %s: no args", job)
	}
	var cmd *cobra.Command
	for _, c := range newRootCmd().Commands() {
		if c.Name() == args[0] {
			cmd = c
		}
	}
	if cmd == nil {
		t.Fatalf("job %s: ratelab has no command %q", job, args[0])
	}
	if err := cmd.ParseFlags(args[1:]); err != nil {
		t.Fatalf("job %s: ratelab %s %v: %v", job, args[0], args[1:], err)
	}
	if cmd.Args != nil {
		if err := cmd.Args(cmd, cmd.Flags().Args()); err != nil {
			t.Fatalf("job %s: ratelab %s: arguments %v: %v", job, args[0], cmd.Flags().Args(), err)
		}
	}
	return cmd
}

// The Jobs `ratelab kubernetes` prints cannot rot: every flag they pass exists and parses, N
// (given once, --parts) is the Indexed Job's completions and parallelism and every pod's
// --part, every part starts at one --start-at, the merge waits for the parts and its --parts
// finds exactly their directories, both jobs mount the same volume, and the password comes from
// a Secret, never from argv.
func TestManifests(t *testing.T) {
	t.Parallel()
	at := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	jobs := generateJobs(t, "--parts", "3", "--run", "hot-1", "--start-at", at.Format(time.RFC3339), "--",
		"hot-tenant", "--cluster", "redis://redis-0.redis:6379", "--rate", "200000", "--duration", "60s", "--seed", "7")
	parts, ok1 := jobs["hot-1-parts"]
	merge, ok2 := jobs["hot-1-merge"]
	if !ok1 || !ok2 || len(jobs) != 2 {
		t.Fatalf("want Jobs hot-1-parts and hot-1-merge, have %v", slices.Collect(maps.Keys(jobs)))
	}
	if parts.Spec.CompletionMode != "Indexed" || parts.Spec.Completions != 3 || parts.Spec.Parallelism != 3 {
		t.Errorf("parts: completionMode %q completions %d parallelism %d; want Indexed, 3, 3 (all parts run together)",
			parts.Spec.CompletionMode, parts.Spec.Completions, parts.Spec.Parallelism)
	}
	n := parts.Spec.Completions
	sc := parts.Spec.Template.Spec.Containers
	mc := merge.Spec.Template.Spec.Containers
	if len(sc) != 1 || len(mc) != 1 || !slices.Equal(sc[0].Command, []string{"ratelab"}) || !slices.Equal(mc[0].Command, []string{"ratelab"}) {
		t.Fatalf("want one container running ratelab in each job")
	}
	var idxFromJob, pwFromSecret bool
	for _, e := range sc[0].Env {
		if e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.annotations['batch.kubernetes.io/job-completion-index']" {
			idxFromJob = true
		}
		if e.Name == "RATELAB_REDIS_PASSWORD" && e.ValueFrom.SecretKeyRef != nil {
			pwFromSecret = true
		}
	}
	if !idxFromJob || !pwFromSecret {
		t.Errorf("part env: index from the job-completion-index annotation %v, RATELAB_REDIS_PASSWORD from a Secret %v; want both", idxFromJob, pwFromSecret)
	}
	var outs []string
	for k := range n {
		args := expand(t, sc[0], strconv.Itoa(k))
		cmd := parseArgs(t, "ratelab-parts", args)
		if cmd.Name() != "run" {
			t.Fatalf("ratelab-parts runs %q, want run", cmd.Name())
		}
		f := cmd.Flags()
		if have, want := f.Lookup("part").Value.String(), strconv.Itoa(k)+"/"+strconv.Itoa(n); have != want {
			t.Errorf("pod %d: --part %s, want %s (completions %d)", k, have, want, n)
		}
		if c := f.Lookup("cluster").Value.String(); !strings.HasPrefix(c, "redis://") && !strings.HasPrefix(c, "rediss://") {
			t.Errorf("pod %d: --cluster %q; want an existing cluster's redis:// URL", k, c)
		}
		if f.Lookup("seed").Value.String() != "7" || !f.Changed("out") {
			t.Errorf("pod %d: want the given --seed and --out on the shared volume", k)
		}
		if have, want := f.Lookup("start-at").Value.String(), at.Format(time.RFC3339Nano); have != want {
			t.Errorf("pod %d: --start-at %q; want %s, one instant for every part", k, have, want)
		}
		for _, a := range args {
			if strings.Contains(strings.ToLower(a), "password") && !strings.HasPrefix(a, "--password-file") {
				t.Errorf("pod %d: argument %q: a password must not be on the command line", k, a)
			}
		}
		outs = append(outs, f.Lookup("out").Value.String())
	}
	margs := expand(t, mc[0], "")
	cmd := parseArgs(t, "ratelab-merge", margs)
	if cmd.Name() != "merge" {
		t.Fatalf("ratelab-merge runs %q, want merge", cmd.Name())
	}
	if w := cmd.Flags().Lookup("wait").Value.String(); w == "0s" {
		t.Errorf("merge --wait %s: the merge starts with the parts and must wait for them", w)
	}
	partsDir := cmd.Flags().Lookup("parts").Value.String()
	if len(cmd.Flags().Args()) != 0 || partsDir == "" {
		t.Errorf("merge: directories %v, --parts %q; want --parts of the run's directory, no list", cmd.Flags().Args(), partsDir)
	}
	for _, o := range outs {
		if ok, _ := filepath.Match(filepath.Join(partsDir, results.PartDirPattern), o); !ok {
			t.Errorf("merge --parts %s does not find part directory %s (want %s)", partsDir, o, filepath.Join(partsDir, results.PartDirPattern))
		}
	}
	if out := cmd.Flags().Lookup("out").Value.String(); out == "" || slices.Contains(outs, out) {
		t.Errorf("merge --out %q: want a directory of its own", out)
	}
	claim := func(j k8sJob) string {
		for _, v := range j.Spec.Template.Spec.Volumes {
			return v.PVC.ClaimName
		}
		return ""
	}
	if a, b := claim(parts), claim(merge); a == "" || a != b {
		t.Errorf("volumes: parts mount claim %q, merge %q; want the same shared claim", a, b)
	}
}

// What the pods cannot run is refused before anything is applied, naming the flag and the fix.
func TestKubernetesRefuses(t *testing.T) {
	t.Parallel()
	url := "redis://r:6379"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"hot-tenant", "--cluster", url}, "after --"},
		{[]string{"--", "hot-tenant", "--cluster", "local"}, `--cluster "local" after --`},
		{[]string{"--", "hot-tenant"}, `--cluster "" after --`},
		{[]string{"--", "hot-tenant", "--cluster", url, "--part", "0/2"}, "--part after --"},
		{[]string{"--", "hot-tenant", "--cluster", url, "--out", "x"}, "--out after --"},
		{[]string{"--", "testdata/smoke.yaml", "--cluster", url}, "the image holds the built-ins only"},
		{[]string{"--", "hot-tenant", "--cluster", url, "--rate", "-1"}, "load.rate"},
		{[]string{"--", "hot-tenant", "--cluster", url, "--nope"}, "unknown flag: --nope"},
		{[]string{"--parts", "0", "--", "hot-tenant", "--cluster", url}, "--parts 0"},
		{[]string{"--run", "Hot_1", "--", "hot-tenant", "--cluster", url}, `--run "Hot_1"`},
		{[]string{"--merge-wait", "1m", "--", "hot-tenant", "--cluster", url, "--duration", "10m"}, "--merge-wait 1m0s"},
	} {
		root := newRootCmd()
		var out, errOut bytes.Buffer
		root.SetOut(&out)
		root.SetErr(&errOut)
		root.SetArgs(append([]string{"kubernetes"}, tc.args...))
		err := root.Execute()
		if err == nil || !strings.Contains(err.Error(), tc.want) || out.Len() != 0 {
			t.Errorf("ratelab kubernetes %v: %v, %d bytes out; want an error naming %q and nothing printed", tc.args, err, out.Len(), tc.want)
		}
	}
}
