package main

import (
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"text/template"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"ratelab/cluster"
	"ratelab/scenarios"
)

// kubernetesOptions are the flags of `ratelab kubernetes`.
type kubernetesOptions struct {
	parts        int
	run          string
	startAt      startAtFlag
	image, claim string
	secret       string
	cpu, memory  string
	mergeWait    time.Duration
}

// Defaults of `ratelab kubernetes`.
const (
	defaultK8sParts  = 4
	defaultK8sImage  = "ratelab:dev"
	defaultK8sClaim  = "ratelab-results"
	defaultK8sSecret = "ratelab-redis"
	// defaultK8sStart leaves the pods time to be scheduled and pull the image before the start.
	defaultK8sStart = 2 * time.Minute
	// k8sMergeMargin is what the merge's wait keeps beyond the parts' start and duration: the
	// parts' set-up before it and their drain and files after.
	k8sMergeMargin = 5 * time.Minute
)

func newKubernetesCmd() *cobra.Command {
	var o kubernetesOptions
	cmd := &cobra.Command{
		Use:   "kubernetes [flags] -- NAME [run flags]",
		Short: "Print the Kubernetes Jobs of one distributed run: N parts and their merge, applied in one step",
		Long: `Print, as one YAML stream for kubectl apply -f -, the Jobs that run the built-in scenario NAME
as --parts N generators against an existing Redis Cluster and merge their results:

  - an Indexed Job <run>-parts whose pod k runs: ratelab run NAME [run flags] --part k/N
    --start-at TIME --out /results/<run>/part-k. Every part sets up, then starts its schedule at
    the one instant TIME, so the merge adds their seconds in step;
  - a Job <run>-merge that starts at the same time and runs ratelab merge --parts
    /results/<run> --wait D: it waits for every part's summary.json, then writes the merged run
    to /results/<run>/merged.

N is given once, here: the Indexed Job's completions and parallelism and every --part come from
it. The run flags after -- are checked as ratelab run would check them (the scenario must be a
built-in: the image holds no files of yours), and --cluster must be the cluster's redis:// or
rediss:// URL; its password comes from the Secret --secret, never from argv. Both Jobs mount
the ReadWriteMany claim --claim (deploy/kubernetes/results-pvc.yaml). See
deploy/kubernetes/README.md and docs/distributed.md.`,
		Example: "  ratelab kubernetes --parts 4 -- hot-tenant --cluster redis://redis-0.redis:6379 --rate 200000 --duration 60s | kubectl apply -f -",
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.ArgsLenAtDash() != 0 || len(args) == 0 {
				return fmt.Errorf("want the run's scenario and flags after --, e.g. ratelab kubernetes --parts 4 -- hot-tenant --cluster redis://host:6379 (have %q)", args)
			}
			return o.write(cmd.OutOrStdout(), args)
		},
	}
	f := cmd.Flags()
	// The run's flags follow its scenario: without --, they reach the check above instead of
	// being taken for this command's own.
	f.SetInterspersed(false)
	f.IntVar(&o.parts, "parts", defaultK8sParts, "`N` generators, each a pod running part k/N of the load")
	f.StringVar(&o.run, "run", "", "the run's `NAME`: the Jobs' names and the results' directory /results/NAME (default <scenario>-<time>)")
	f.Var(&o.startAt, "start-at", fmt.Sprintf("the instant every part starts its schedule (RFC 3339, or +D from now; default +%s)", defaultK8sStart))
	f.StringVar(&o.image, "image", defaultK8sImage, "the ratelab `IMAGE` the pods run (make image)")
	f.StringVar(&o.claim, "claim", defaultK8sClaim, "the ReadWriteMany volume `CLAIM` the parts write to and the merge reads")
	f.StringVar(&o.secret, "secret", defaultK8sSecret, `the Secret whose key "password" is the cluster's password ("": a cluster without one)`)
	f.StringVar(&o.cpu, "cpu", "2", "CPU each part requests (a generator is CPU-bound: give it whole cores)")
	f.StringVar(&o.memory, "memory", "1Gi", "memory each part requests")
	f.DurationVar(&o.mergeWait, "merge-wait", 0, fmt.Sprintf("how long the merge waits for the parts (default: until the start, plus the run's duration, plus %s)", k8sMergeMargin))
	return cmd
}

// k8sRun is what the template of the Jobs reads.
type k8sRun struct {
	Command, Run, StartAt  string
	Parts                  int
	PartArgs, MergeArgs    []string
	Image, Claim, Secret   string
	CPU, Memory, RunArgs   string
	PartsJob, MergeJob     string
	PasswordEnv, IndexPath string
}

// dnsLabel is a Kubernetes object name's shape (RFC 1123 label); the Jobs add "-parts" and
// "-merge" and a pod's name adds the index and a suffix, so the run's name keeps to 40.
var dnsLabel = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,38}[a-z0-9])?$`)

// write checks the options and the run's arguments and writes the Jobs to w.
func (o kubernetesOptions) write(w io.Writer, runArgs []string) error {
	if o.parts < 1 {
		return fmt.Errorf("--parts %d: want 1 or more generators", o.parts)
	}
	spec, err := checkK8sRunArgs(runArgs)
	if err != nil {
		return err
	}
	now := time.Now()
	at := o.startAt.at
	if at.IsZero() {
		at = now.Add(defaultK8sStart).Truncate(time.Second)
	}
	if o.run == "" {
		o.run = strings.ToLower(spec.Name) + "-" + now.UTC().Format("20060102-150405")
	}
	if !dnsLabel.MatchString(o.run) {
		return fmt.Errorf("--run %q: want a Kubernetes name of at most 40 characters: lower-case letters, digits and '-', starting and ending with a letter or digit", o.run)
	}
	least := time.Until(at) + time.Duration(spec.Duration) + k8sMergeMargin
	if o.mergeWait == 0 {
		o.mergeWait = least.Round(time.Minute)
	} else if o.mergeWait < least-k8sMergeMargin {
		return fmt.Errorf("--merge-wait %s: the parts start in %s and run %s, so the merge would give up before they end; give at least %s, or leave it out",
			o.mergeWait, time.Until(at).Round(time.Second), time.Duration(spec.Duration), least.Round(time.Minute))
	}
	r := o.k8sRun(runArgs, at.UTC().Format(time.RFC3339Nano))
	return k8sTemplate.Execute(w, r)
}

// k8sRun fills the template's fields.
func (o kubernetesOptions) k8sRun(runArgs []string, at string) k8sRun {
	dir := "/results/" + o.run
	part := append([]string{"run"}, runArgs...)
	part = append(part, "--part", "$(PART_INDEX)/"+strconv.Itoa(o.parts), "--start-at", at, "--out", dir+"/part-$(PART_INDEX)", "--quiet")
	return k8sRun{
		Command: "ratelab " + strings.Join(os.Args[1:], " "), Run: o.run, StartAt: at, Parts: o.parts,
		PartArgs:  part,
		MergeArgs: []string{"merge", "--parts", dir, "--out", dir + "/merged", "--wait", o.mergeWait.String()},
		Image:     o.image, Claim: o.claim, Secret: o.secret, CPU: o.cpu, Memory: o.memory,
		RunArgs:  strings.Join(runArgs, " "),
		PartsJob: o.run + "-parts", MergeJob: o.run + "-merge",
		PasswordEnv: cluster.PasswordEnv, IndexPath: "metadata.annotations['batch.kubernetes.io/job-completion-index']",
	}
}

// k8sRefused are run flags the Jobs set themselves, or that name files the image does not hold.
var k8sRefused = map[string]string{
	"part":          "the Jobs give every pod its --part from --parts",
	"start-at":      "the Jobs give every part the --start-at of this command",
	"out":           "the parts write to /results/RUN/part-K on the claim (--run names RUN)",
	"repeat":        "a part runs once; repeat the whole run with another --run",
	"password-file": "the password comes from the Secret (--secret)",
	"tls-ca":        "the pods have no files of yours; mount them and add the flag to the Job by hand",
	"tls-cert":      "the pods have no files of yours; mount them and add the flag to the Job by hand",
	"tls-key":       "the pods have no files of yours; mount them and add the flag to the Job by hand",
	"trace":         "the pods have no files of yours; use a built-in scenario's seeded schedule",
	"record-trace":  "each part's trace would be its own part's; record a trace on one machine",
	"state":         "the pods reach the cluster by its URL (--cluster redis://...)",
	"docker-image":  "the pods reach the cluster by its URL (--cluster redis://...)",
	"cpuprofile":    "a profile would stay in the pod; profile one part on one machine",
	"memprofile":    "a profile would stay in the pod; profile one part on one machine",
}

// checkK8sRunArgs parses the run's arguments as `ratelab run` does and refuses what the pods
// cannot run: flags the Jobs set, files, a scenario that is not built in, a cluster without a
// URL. It returns the scenario with the flags applied.
func checkK8sRunArgs(args []string) (*scenarios.Spec, error) {
	var ro runOptions
	rc := &cobra.Command{Use: "run", Args: cobra.ExactArgs(1)}
	ro.addFlags(rc)
	if err := rc.ParseFlags(args); err != nil {
		return nil, fmt.Errorf("the run's flags after --: %w", err)
	}
	pos := rc.Flags().Args()
	if len(pos) != 1 {
		return nil, fmt.Errorf("the run's arguments after --: want one built-in scenario NAME and its flags, have %q", pos)
	}
	var refused error
	rc.Flags().Visit(func(fl *pflag.Flag) {
		if why, ok := k8sRefused[fl.Name]; ok && refused == nil {
			refused = fmt.Errorf("--%s after --: %s", fl.Name, why)
		}
	})
	if refused != nil {
		return nil, refused
	}
	if !strings.HasPrefix(ro.cluster, "redis://") && !strings.HasPrefix(ro.cluster, "rediss://") {
		return nil, fmt.Errorf("--cluster %q after --: the pods need the existing cluster's URL, e.g. --cluster redis://redis-0.redis.svc:6379", ro.cluster)
	}
	spec, err := scenarios.Builtin(pos[0])
	if err != nil {
		return nil, fmt.Errorf("scenario %q after --: %w (the image holds the built-ins only: ratelab scenarios lists them)", pos[0], err)
	}
	if err := applyOverrides(rc, spec, ro); err != nil {
		return nil, err
	}
	return spec, nil
}

// k8sTemplate is the YAML stream of one run's Jobs. Values that come from the user are quoted
// (q); the rest are names checked above or fixed.
var k8sTemplate = template.Must(template.New("k8s").Funcs(template.FuncMap{
	"q": strconv.Quote,
	"labels": func(component, run string) string {
		return "{app.kubernetes.io/name: ratelab, app.kubernetes.io/component: " + component + ", app.kubernetes.io/instance: " + run + "}"
	},
	"list": func(xs []string) string {
		qs := make([]string, len(xs))
		for i, x := range xs {
			qs[i] = strconv.Quote(x)
		}
		return "[" + strings.Join(qs, ", ") + "]"
	},
}).Parse(`{{define "volumes"}}
          volumeMounts:
            - {name: results, mountPath: /results}
      volumes:
        - name: results
          persistentVolumeClaim: {claimName: {{q .Claim}}}
{{- end}}
{{- define "container"}}
      restartPolicy: Never
      containers:
        - name: ratelab
          image: {{q .Image}}
          command: [ratelab]
{{- end -}}
# Generated by: {{.Command}}
# The distributed run {{.Run}}: {{.Parts}} parts of ratelab run {{.RunArgs}},
# every part starting its schedule at {{.StartAt}}, then their merge into /results/{{.Run}}/merged.
# Apply it in one step (kubectl apply -f FILE, or pipe the command into kubectl apply -f -).
# It needs the ReadWriteMany claim {{.Claim}} (deploy/kubernetes/results-pvc.yaml){{if .Secret}} and the
# Secret {{.Secret}} with the cluster's password (deploy/kubernetes/redis-secret.example.yaml){{end}}.
---
# Pod k runs part k/{{.Parts}} of the load: the tenants i with i mod {{.Parts}} = k.
apiVersion: batch/v1
kind: Job
metadata:
  name: {{.PartsJob}}
  labels: {{labels "part" .Run}}
spec:
  completionMode: Indexed
  completions: {{.Parts}}
  # Every part at once: they share one start.
  parallelism: {{.Parts}}
  # A failed part is not retried: a rerun would start after its siblings' start. Rerun the
  # whole run under another --run.
  backoffLimit: 0
  template:
    metadata:
      labels: {{labels "part" .Run}}
    spec:
{{- template "container" .}}
          args: {{list .PartArgs}}
          env:
            # The pod's index in the Indexed Job, declared here so that the kubelet expands
            # $(PART_INDEX) in args.
            - name: PART_INDEX
              valueFrom:
                fieldRef:
                  fieldPath: {{q .IndexPath}}
{{- if .Secret}}
            - name: {{.PasswordEnv}}
              valueFrom:
                secretKeyRef: {name: {{q .Secret}}, key: password}
{{- end}}
          resources:
            requests: {cpu: {{q .CPU}}, memory: {{q .Memory}}}
{{- template "volumes" .}}
---
# Starts with the parts and waits (--wait) for every part's summary.json, then merges them.
apiVersion: batch/v1
kind: Job
metadata:
  name: {{.MergeJob}}
  labels: {{labels "merge" .Run}}
spec:
  backoffLimit: 0
  template:
    metadata:
      labels: {{labels "merge" .Run}}
    spec:
{{- template "container" .}}
          args: {{list .MergeArgs}}
          resources:
            requests: {cpu: 100m, memory: 512Mi}
{{- template "volumes" .}}
`))
