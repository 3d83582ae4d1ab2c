package limiter

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// tariffFile, tariffPlanFile, tariffLimitFile and tariffQuotaFile are the YAML as written.
// Pointers tell a field left out from a zero written on purpose.
type tariffFile struct {
	Version     *int64                    `yaml:"version"`
	Plans       map[string]tariffPlanFile `yaml:"plans"`
	Tenants     map[string]string         `yaml:"tenants"`
	DefaultPlan string                    `yaml:"default_plan"`
}

type tariffPlanFile struct {
	Default   tariffLimitFile            `yaml:"default"`
	Endpoints map[string]tariffLimitFile `yaml:"endpoints"`
	Quota     *tariffQuotaFile           `yaml:"quota"`
}

type tariffLimitFile struct {
	Rate  *float64 `yaml:"rate"`
	Burst *int64   `yaml:"burst"`
	Fail  *string  `yaml:"fail"`
}

type tariffQuotaFile struct {
	Limit  *int64  `yaml:"limit"`
	Window *string `yaml:"window"`
}

// TariffError is one problem of a tariff file: where (File, Line: 0 when unknown), which field
// (a path such as "plans.free.endpoints.search.rate"), its value and the fix. It wraps
// ErrBadConfig.
type TariffError struct {
	File  string
	Line  int
	Field string
	Value string
	Fix   string
}

func (e *TariffError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		b.WriteString(":" + strconv.Itoa(e.Line))
	}
	if e.Field != "" {
		b.WriteString(": " + e.Field)
	}
	if e.Value != "" {
		b.WriteString(": " + e.Value)
	}
	b.WriteString(": " + e.Fix)
	return b.String()
}

// Unwrap returns ErrBadConfig.
func (e *TariffError) Unwrap() error { return ErrBadConfig }

// yamlTypeErr matches one message of a yaml.TypeError ("line 3: field x not found in type ...").
var yamlTypeErr = regexp.MustCompile(`^line (\d+): (.*)$`)

// ParseTariffs decodes a tariff file strictly and validates it, reporting every problem at once
// (errors.Join of *TariffError, each wrapping ErrBadConfig). name (a file name) prefixes the
// messages: "tariffs.yaml:4: plans.free.default.rate: -1: must be a finite number > 0 tokens per
// second".
func ParseTariffs(name string, data []byte) (*Tariffs, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var f tariffFile
	if err := dec.Decode(&f); err != nil {
		return nil, decodeError(name, err)
	}
	var root yaml.Node
	_ = yaml.Unmarshal(data, &root)
	v := tariffValidator{name: name, root: &root}
	t := v.build(&f)
	if err := errors.Join(v.errs...); err != nil {
		return nil, err
	}
	return t, nil
}

// decodeError turns a YAML decoding error into TariffErrors that do not name Go types.
func decodeError(name string, err error) error {
	if errors.Is(err, io.EOF) {
		return &TariffError{File: name, Fix: "empty tariff file: write version, plans and default_plan"}
	}
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		return &TariffError{File: name, Fix: strings.TrimPrefix(err.Error(), "yaml: ")}
	}
	var errs []error
	for _, msg := range te.Errors {
		e := &TariffError{File: name, Fix: msg}
		if m := yamlTypeErr.FindStringSubmatch(msg); m != nil {
			e.Line, _ = strconv.Atoi(m[1])
			e.Fix = m[2]
		}
		if i := strings.Index(e.Fix, " in type limiter."); i >= 0 {
			e.Fix = e.Fix[:i]
		}
		if strings.HasPrefix(e.Fix, "field ") && strings.HasSuffix(e.Fix, " not found") {
			e.Fix = "unknown " + strings.TrimSuffix(e.Fix, " not found") + ": remove it or fix its spelling"
		}
		errs = append(errs, e)
	}
	return errors.Join(errs...)
}

// tariffValidator collects every problem of a file while resolving it into Tariffs.
type tariffValidator struct {
	name string
	root *yaml.Node
	errs []error
}

func (v *tariffValidator) bad(field string, value any, fix string) {
	v.errs = append(v.errs, &TariffError{File: v.name, Line: tariffLine(v.root, field), Field: field, Value: fmt.Sprint(value), Fix: fix})
}

// build validates f and resolves it; the result is meaningful only when v.errs is empty.
func (v *tariffValidator) build(f *tariffFile) *Tariffs {
	t := &Tariffs{plans: make(map[string]*tariffPlan, len(f.Plans)), tenants: make(map[string]*tariffPlan, len(f.Tenants))}
	if f.Version == nil {
		v.bad("version", "missing", "set version to a number >= 1 and bump it on every change")
	} else if t.version = *f.Version; t.version < 1 {
		v.bad("version", t.version, "must be >= 1; bump it on every change")
	}
	names := sortedKeys(f.Plans)
	if len(names) == 0 {
		v.bad("plans", "none", "define at least one plan, e.g. free: {default: {rate: 10, burst: 20}}")
	}
	for _, n := range names {
		t.plans[n] = v.plan(n, f.Plans[n], t.version)
	}
	known := strings.Join(names, ", ")
	for _, tenant := range sortedKeys(f.Tenants) {
		plan := f.Tenants[tenant]
		field := "tenants." + tenant
		if strings.ContainsAny(tenant, "{}") {
			v.bad(field, strconv.Quote(tenant), "a tenant must not contain '{' or '}' (the key's hash tag is {tenant})")
		}
		if p := t.plans[plan]; p != nil {
			t.tenants[tenant] = p
		} else {
			v.bad(field, strconv.Quote(plan), "no such plan; define it under plans or use one of: "+known)
		}
	}
	switch p := t.plans[f.DefaultPlan]; {
	case f.DefaultPlan == "":
		v.bad("default_plan", "missing", "name the plan of tenants not listed, one of: "+known)
	case p == nil:
		v.bad("default_plan", strconv.Quote(f.DefaultPlan), "no such plan; use one of: "+known)
	default:
		t.defaultPlan = p
	}
	return t
}

// plan validates and resolves one plan.
func (v *tariffValidator) plan(name string, pf tariffPlanFile, version int64) *tariffPlan {
	at := "plans." + name
	def := Rule{Plan: name, Version: version}
	v.limit(at+".default", pf.Default, &def, true)
	if q := pf.Quota; q != nil {
		v.quota(at+".quota", q, &def)
	}
	p := &tariffPlan{def: def, endpoints: make(map[string]Rule, len(pf.Endpoints))}
	for _, ep := range sortedKeys(pf.Endpoints) {
		r := def
		v.limit(at+".endpoints."+ep, pf.Endpoints[ep], &r, false)
		p.endpoints[ep] = r
	}
	return p
}

// limit applies lf over r. A plan default must give rate and burst; an override inherits them.
func (v *tariffValidator) limit(at string, lf tariffLimitFile, r *Rule, required bool) {
	ok := true
	switch {
	case lf.Rate != nil:
		r.Bucket.Rate = *lf.Rate
		if !(r.Bucket.Rate > 0) || math.IsInf(r.Bucket.Rate, 0) {
			v.bad(at+".rate", r.Bucket.Rate, "must be a finite number > 0 tokens per second")
			ok = false
		}
	case required:
		v.bad(at+".rate", "missing", "set the refill rate in tokens per second, e.g. rate: 10")
		ok = false
	}
	switch {
	case lf.Burst != nil:
		r.Bucket.Burst = *lf.Burst
		if r.Bucket.Burst < 1 || r.Bucket.Burst > 1<<53 {
			v.bad(at+".burst", r.Bucket.Burst, "must be between 1 and 2^53 tokens")
			ok = false
		}
	case required:
		v.bad(at+".burst", "missing", "set the bucket capacity in tokens, e.g. burst: 20")
		ok = false
	}
	if ok && (lf.Rate != nil || lf.Burst != nil) {
		if err := checkPolicy(r.Bucket); err != nil {
			v.bad(at, "", strings.TrimPrefix(err.Error(), ErrBadConfig.Error()+": policy "))
		}
	}
	if lf.Fail != nil {
		m, err := ParseFailMode(*lf.Fail)
		if err != nil {
			v.bad(at+".fail", strconv.Quote(*lf.Fail), "use open, closed or local")
			return
		}
		r.Fail = FailPolicy{Mode: m}
		if m == FailModeLocal {
			r.Fail.LocalFraction = DefaultTariffLocalFraction
		}
	}
}

// quota validates a plan's quota and sets it on the plan's default rule.
func (v *tariffValidator) quota(at string, q *tariffQuotaFile, r *Rule) {
	switch {
	case q.Limit == nil:
		v.bad(at+".limit", "missing", "set the quota in cost units per window, e.g. limit: 10000")
	case *q.Limit < 1 || *q.Limit > 1<<53:
		v.bad(at+".limit", *q.Limit, "must be between 1 and 2^53 cost units per window")
	default:
		r.QuotaLimit = *q.Limit
	}
	if q.Window == nil {
		v.bad(at+".window", "missing", "set the quota's window as a duration, e.g. window: 24h")
		return
	}
	w, err := time.ParseDuration(*q.Window)
	if err != nil {
		v.bad(at+".window", strconv.Quote(*q.Window), "not a duration; write it like 24h, 1h30m or 500ms")
		return
	}
	if err := checkWindow(w); err != nil {
		v.bad(at+".window", w, strings.TrimPrefix(err.Error(), "window "+w.String()+": "))
		return
	}
	r.QuotaWindow = w
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// tariffLine returns the line where a field path ("plans.free.default.rate") is written, or that
// of its nearest written parent; 0 when nothing of it is written. A name holding a dot resolves
// to its parent's line.
func tariffLine(root *yaml.Node, path string) int {
	n := root
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	line := 0
	for _, part := range strings.Split(path, ".") {
		var next *yaml.Node
		if n.Kind == yaml.MappingNode {
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == part {
					next, line = n.Content[i+1], n.Content[i].Line
					break
				}
			}
		}
		if next == nil {
			return line
		}
		n = next
	}
	return line
}
