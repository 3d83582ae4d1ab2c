package attack_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"ratelab/limiter"
	"ratelab/limiter/gateway"
	"ratelab/results"
	"ratelab/run/attack"
	"ratelab/scenarios"
)

// startGateway serves ratelab's gateway on 127.0.0.1:0 in front of lim and returns its URL.
func startGateway(t *testing.T, lim limiter.Limiter, opts ...gateway.Option) string {
	t.Helper()
	srv, err := gateway.NewServer("127.0.0.1:0", lim, nil, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return serve(t, srv.Handler())
}

func serve(t *testing.T, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = hs.Shutdown(ctx)
	})
	return "http://" + ln.Addr().String() + "/"
}

// readRows reads a run's timeseries.csv.
func readRows(t *testing.T, dir string) []results.Interval {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, results.TimeseriesFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := results.ReadTimeseries(f)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// decodeResults reads vegeta's results file the way `vegeta report` does.
func decodeResults(t *testing.T, path string) []vegeta.Result {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dec := vegeta.NewDecoder(f)
	var out []vegeta.Result
	for {
		var r vegeta.Result
		if err := dec.Decode(&r); err != nil {
			if errors.Is(err, io.EOF) {
				return out
			}
			t.Fatalf("decode %s after %d results: %v", path, len(out), err)
		}
		out = append(out, r)
	}
}

// An attack on the real gateway (in-memory bucket, real HTTP on loopback): the summary, the
// timeseries and vegeta's own results file agree on every count, hot tenants get 429s and cold
// ones 200s, a correct limiter shows no overspend, and latency from the intended start is never
// below vegeta's dequeue-based latency.
func TestAttackGateway(t *testing.T) {
	t.Parallel()
	policy := limiter.BucketPolicy{Rate: 5, Burst: 5}
	lim, err := limiter.NewTokenBucket(policy)
	if err != nil {
		t.Fatal(err)
	}
	url := startGateway(t, lim, gateway.WithPolicy(policy))
	dir := t.TempDir()
	res, err := attack.Attack(context.Background(), attack.Options{
		URL: url, Rate: 150, Duration: 3 * time.Second, Tenants: 20, Theta: 0.99, Seed: 7,
		Endpoints: []string{"search", "read"}, Policy: policy, Out: dir, Timeout: 20 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	s := res.Summary

	rs := decodeResults(t, filepath.Join(dir, attack.ResultsFile))
	var ok200, n429, other int64
	own := make([]float64, 0, len(rs))
	for _, r := range rs {
		switch r.Code {
		case 200:
			ok200++
		case 429:
			n429++
		default:
			other++
		}
		own = append(own, float64(r.Latency)/1e6)
	}
	if int64(len(rs)) != s.Load.Completed || int64(len(rs)) != s.Load.Sent {
		t.Errorf("results.bin holds %d results; summary decisions %d, sent %d", len(rs), s.Load.Completed, s.Load.Sent)
	}
	if ok200 != s.Outcomes.Allowed || n429 != s.Outcomes.Denied || other != s.Outcomes.Errors {
		t.Errorf("results.bin 200/429/other = %d/%d/%d; summary allowed/denied/errors = %d/%d/%d",
			ok200, n429, other, s.Outcomes.Allowed, s.Outcomes.Denied, s.Outcomes.Errors)
	}
	if ok200 == 0 || n429 == 0 {
		t.Errorf("want both 200s and 429s, got %d and %d", ok200, n429)
	}
	if s.Load.Sent+s.Load.Dropped != 450 {
		t.Errorf("sent %d + dropped %d, want the 450 scheduled", s.Load.Sent, s.Load.Dropped)
	}
	// A correct limiter: overspend is at most the residue of judging a black box whose decision
	// moments are unknown — 0 on a quiet machine, a few percent when a loaded machine stretches
	// responses to seconds. A limiter that limits nothing scores over 50% here
	// (TestAttackCatchesOverspend), so the bound still tells the two apart.
	if lim := max(3, s.Outcomes.Allowed*5/100); s.Overspend.Requests > lim {
		t.Errorf("overspend %d requests (ratio %g) against the declared policy; want <= %d", s.Overspend.Requests, s.Overspend.Ratio, lim)
	}
	// Every request's latency from its intended start is >= vegeta's, so every quantile is.
	sort.Float64s(own)
	const slack = 0.002 // ms: the histogram rounds to the microsecond
	if med := own[len(own)/2]; s.LatencyServedMs.P50+slack < med {
		t.Errorf("p50 from intended start %.3f ms < vegeta's median %.3f ms", s.LatencyServedMs.P50, med)
	}
	if mx := own[len(own)-1]; s.LatencyServedMs.Max+slack < mx {
		t.Errorf("max from intended start %.3f ms < vegeta's max %.3f ms", s.LatencyServedMs.Max, mx)
	}

	rows := readRows(t, dir)
	var sent, allowed, denied int64
	for _, r := range rows {
		sent += r.Sent
		allowed += r.Allowed
		denied += r.Denied
	}
	if len(rows) != 3 || sent != s.Load.Sent || allowed != s.Outcomes.Allowed || denied != s.Outcomes.Denied {
		t.Errorf("timeseries: %d rows, sent %d allowed %d denied %d; summary sent %d allowed %d denied %d",
			len(rows), sent, allowed, denied, s.Load.Sent, s.Outcomes.Allowed, s.Outcomes.Denied)
	}
	if _, err := results.ReadSummary(filepath.Join(dir, results.SummaryFile)); err != nil {
		t.Error(err)
	}
	checkLatencyLog(t, dir, rows)
	t.Logf("sent %d: %d allowed, %d denied; overspend %d, false denies %d; p50 %.3f ms (vegeta %.3f), max %.3f (vegeta %.3f)",
		s.Load.Sent, s.Outcomes.Allowed, s.Outcomes.Denied, s.Overspend.Requests, s.Overspend.FalseDenies,
		s.LatencyMs.P50, own[len(own)/2], s.LatencyMs.Max, own[len(own)-1])
}

// The overspend envelope is not blind: a target that lets everything through is caught.
func TestAttackCatchesOverspend(t *testing.T) {
	t.Parallel()
	url := startGateway(t, limiter.Noop{})
	res, err := attack.Attack(context.Background(), attack.Options{
		URL: url, Rate: 200, Duration: 2 * time.Second, Tenants: 5, Seed: 3,
		Policy: limiter.BucketPolicy{Rate: 5, Burst: 5}, Out: t.TempDir(), Timeout: 20 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	s := res.Summary
	if s.Outcomes.Denied != 0 || s.Outcomes.Allowed == 0 {
		t.Fatalf("a no-op gateway: allowed %d denied %d", s.Outcomes.Allowed, s.Outcomes.Denied)
	}
	// 5 tenants x burst 5 + 5/s x 2 s x 5 tenants = at most ~75 conforming of ~400 sent.
	if s.Overspend.Requests < s.Outcomes.Allowed/2 {
		t.Errorf("overspend %d of %d allowed: the envelope missed a limiter that limits nothing", s.Overspend.Requests, s.Outcomes.Allowed)
	}
}

func TestCheckURL(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		url    string
		remote bool
		want   error
	}{
		{"http://127.0.0.1:8080/", false, nil},
		{"http://localhost:1/x", false, nil},
		{"http://[::1]:80/", false, nil},
		{"http://10.0.0.1:8080/", false, attack.ErrNotLoopback},
		{"https://example.com/", false, attack.ErrNotLoopback},
		{"https://example.com/", true, nil},
		{"127.0.0.1:8080", false, attack.ErrInvalid},
		{"ftp://127.0.0.1/", false, attack.ErrInvalid},
	} {
		err := attack.CheckURL(tc.url, tc.remote)
		if (tc.want == nil) != (err == nil) || (tc.want != nil && !errors.Is(err, tc.want)) {
			t.Errorf("CheckURL(%q, %v) = %v, want %v", tc.url, tc.remote, err, tc.want)
		}
	}
}

func TestValidateNamesEveryProblem(t *testing.T) {
	t.Parallel()
	err := attack.Options{URL: "http://10.1.1.1/", Rate: -1, Pacer: "zigzag", Theta: -2}.Validate()
	if err == nil {
		t.Fatal("want errors")
	}
	for _, want := range []string{"--allow-remote", "policy", "rate -1", `pacer "zigzag"`, "zipf -2"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}

// checkLatencyLog reads the run's latency.hlog with hdrhistogram-go's reader (through
// results.ReadLatencyLog): one interval per row, each holding its second's served requests and
// starting at the row's time_utc.
func checkLatencyLog(t *testing.T, dir string, rows []results.Interval) {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, results.LatencyLogFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	log, err := results.ReadLatencyLog(f)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		h := log.Seconds[int(r.TS)]
		if h == nil {
			t.Errorf("latency.hlog has no interval for second %g", r.TS)
			continue
		}
		if h.Count() != r.Served() {
			t.Errorf("second %g: latency.hlog holds %d requests, the row served %d", r.TS, h.Count(), r.Served())
		}
		if at := results.SecondTime(log.Start, r.TS); r.Time.IsZero() || !at.Equal(r.Time) {
			t.Errorf("second %g: time_utc %v, latency.hlog's start + %g s = %v", r.TS, r.Time, r.TS, at)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, results.PercentilesFile)); err != nil {
		t.Errorf("no %s: %v", results.PercentilesFile, err)
	}
}

// TestAttackClosedPortFailsItsSLO is the reading of an attack on a closed port: every request
// was refused, "served" printed a p50 of the refusals and the p99 SLO passed. A refused request
// gets no decision: it is a failure over offered requests, served latency has nothing, and the
// SLO fails.
func TestAttackClosedPortFailsItsSLO(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String() + "/"
	ln.Close() // nothing listens there now: every connection is refused
	p99 := 100.0
	res, err := attack.Attack(context.Background(), attack.Options{
		URL: url, Rate: 50, Duration: 2 * time.Second, Tenants: 5, Seed: 3,
		Policy: limiter.BucketPolicy{Rate: 5, Burst: 5}, Out: t.TempDir(), Timeout: 2 * time.Second,
		SLO: scenarios.SLO{P99Ms: &p99},
	})
	if err != nil {
		t.Fatal(err)
	}
	s := res.Summary
	if s.Outcomes.Errors != s.Load.Offered || s.Errors.Conn != s.Load.Offered || s.Overspend.UnknownOutcomes != 0 {
		t.Fatalf("outcomes %+v, errors %+v, unknown %d of %d offered: want every request a refused connection, none unknown",
			s.Outcomes, s.Errors, s.Overspend.UnknownOutcomes, s.Load.Offered)
	}
	if s.LatencyMs.P50.Measurable() || s.LatencyServedMs.P50 != 0 || s.SLO.Pass || s.Load.AchievedRPS != 0 {
		t.Fatalf("p50 over offered %v, served p50 %v, SLO pass %v, achieved %v: want not measurable, nothing served, a failed SLO, 0/s",
			s.LatencyMs.P50, s.LatencyServedMs.P50, s.SLO.Pass, s.Load.AchievedRPS)
	}
}

// slowTarget answers every request after delay.
type slowTarget struct{ delay time.Duration }

func (s slowTarget) Allow(context.Context, limiter.Request) (limiter.Decision, error) {
	time.Sleep(s.delay)
	return limiter.Decision{Allowed: true}, nil
}

// A target slower than the offered rate (two workers, 20 ms per answer: ~100/s of 300/s) holds
// the attack below its schedule: the summary names the limiter as the limit, and does not blame
// the generator, which kept its schedule.
func TestAttackNamesASlowTarget(t *testing.T) {
	t.Parallel()
	url := startGateway(t, slowTarget{delay: 20 * time.Millisecond})
	res, err := attack.Attack(context.Background(), attack.Options{
		URL: url, Rate: 300, Duration: time.Second, Tenants: 5, Seed: 3, Workers: 2, MaxWorkers: 2,
		Policy: limiter.BucketPolicy{Rate: 1000, Burst: 1000}, Out: t.TempDir(), Timeout: 20 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	l := res.Summary.Load
	if l.AchievedRPS > 200 || l.GeneratorLimited || l.Limit != results.LimitLimiter {
		t.Errorf("load %+v: a 100/s target under 300/s is the limit, not the generator", l)
	}
}
