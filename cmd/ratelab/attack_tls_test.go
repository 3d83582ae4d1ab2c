package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"ratelab/limiter"
	"ratelab/limiter/gateway"
	"ratelab/results"
	"ratelab/run/attack"
)

// testPKI makes a self-signed CA and a server certificate for 127.0.0.1 signed by it, and
// returns the CA's PEM and the server's certificate.
func testPKI(t *testing.T) ([]byte, tls.Certificate) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "ratelab test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	srvKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	srvTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		KeyUsage: x509.KeyUsageDigitalSignature,
	}
	srvDER, err := x509.CreateCertificate(rand.Reader, srvTmpl, ca, &srvKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	return caPEM, tls.Certificate{Certificate: [][]byte{srvDER}, PrivateKey: srvKey}
}

// seen records what the gateway's clients sent: methods, bodies and Authorization values.
type seen struct {
	mu      sync.Mutex
	methods map[string]int
	bodies  map[string]int
	auth    map[string]int
}

func (s *seen) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.methods[r.Method]++
		s.bodies[string(body)]++
		s.auth[r.Header.Get("Authorization")]++
		s.mu.Unlock()
		next.ServeHTTP(w, r)
	})
}

// startTLSGateway serves ratelab's gateway over TLS on loopback, keys mapped to tenants (an
// unknown key answers 401), and returns its https URL and what it saw.
func startTLSGateway(t *testing.T, cert tls.Certificate, policy limiter.BucketPolicy, keys map[string]string) (string, *seen) {
	t.Helper()
	tb, err := limiter.NewTokenBucket(policy)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := gateway.NewServer("127.0.0.1:0", tb, nil, gateway.WithPolicy(policy), gateway.WithKeyMap(keys))
	if err != nil {
		t.Fatal(err)
	}
	s := &seen{methods: map[string]int{}, bodies: map[string]int{}, auth: map[string]int{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: s.wrap(srv.Handler()), ReadHeaderTimeout: 5 * time.Second,
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}}, ErrorLog: nil}
	go func() { _ = hs.ServeTLS(ln, "", "") }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = hs.Shutdown(ctx)
	})
	return "https://" + ln.Addr().String() + "/", s
}

// `ratelab attack` over TLS as an SRE points it at a real API: a POST with a body and an extra
// secret header, bearer tokens from a keys file, the server's CA from --ca. The gateway parses
// every identity (an unknown key would answer 401), its headers are honest within the
// tolerance, and neither the keys nor the secret header reach the output or the run directory.
func TestAttackTLSBearerPost(t *testing.T) {
	t.Parallel()
	caPEM, cert := testPKI(t)
	keys := map[string]string{"sk-live-a1b2c3": "acme", "sk-live-d4e5f6": "globex", "sk-live-g7h8i9": "initech"}
	url, s := startTLSGateway(t, cert, limiter.BucketPolicy{Rate: 20, Burst: 5}, keys)
	dir := t.TempDir()
	caFile, keysFile := filepath.Join(dir, "ca.pem"), filepath.Join(dir, "keys.txt")
	if err := os.WriteFile(caFile, caPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keysFile, []byte("sk-live-a1b2c3\nsk-live-d4e5f6\nsk-live-g7h8i9\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "run")
	const body = `{"query":"rate limits"}`
	code, stdout, stderr := execRatelab(t, dir, "attack", "-q", "--url", url, "--ca", caFile,
		"--key-header", "Authorization", "--key-format", "Bearer {key}", "--keys-file", keysFile,
		"--method", "POST", "--body", body, "-H", "X-Session-Token: tok-zz9", "-H", "Accept: application/json",
		"--rate", "150", "--duration", "2s", "--policy", "rate=20,burst=5", "--out", out)
	if code != 0 {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	sum, err := results.ReadSummary(filepath.Join(out, results.SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	if sum.Outcomes.Errors != 0 || sum.Outcomes.Allowed == 0 || sum.Outcomes.Denied == 0 {
		t.Errorf("allowed %d denied %d errors %d: want every request decided (no 401), some 429", sum.Outcomes.Allowed, sum.Outcomes.Denied, sum.Outcomes.Errors)
	}
	// Three tenants at 20/s with a burst of 5 over 2 s: at most 3 x (5 + 20 x 2) = 135 allowed.
	if sum.Outcomes.Allowed > 135+10 {
		t.Errorf("allowed %d: more than three tenants' buckets hold; identities not parsed?", sum.Outcomes.Allowed)
	}
	s.mu.Lock()
	if s.methods["POST"] != int(sum.Load.Sent) || s.bodies[body] != int(sum.Load.Sent) {
		t.Errorf("gateway saw methods %v, bodies %d of %d as sent", s.methods, s.bodies[body], sum.Load.Sent)
	}
	for k := range keys {
		if s.auth["Bearer "+k] == 0 {
			t.Errorf("gateway never saw Bearer %s: %v", k, s.auth)
		}
	}
	if len(s.auth) != len(keys) {
		t.Errorf("gateway saw %d Authorization values, want the 3 keys: %v", len(s.auth), s.auth)
	}
	s.mu.Unlock()
	h := sum.HeaderHonesty
	if h == nil || h.Checked[attack.LieRetryEarlyAllow] == 0 || h.TotalLies() != 0 {
		t.Errorf("header honesty %+v: want checks and no lies", h)
	}
	if !strings.Contains(sum.Load.Note, "POST") || !strings.Contains(sum.Load.Note, "TLS verified against the system roots plus --ca") {
		t.Errorf("summary note does not record method and TLS: %s", sum.Load.Note)
	}
	if !strings.Contains(stdout, "headers      0 lies") {
		t.Errorf("text summary lacks the header-honesty line:\n%s", stdout)
	}
	assertNoSecrets(t, out, stdout+stderr, "sk-live-", "tok-zz9")
}

// assertNoSecrets fails when any file under dir or the text holds one of the secrets.
func assertNoSecrets(t *testing.T, dir, text string, secrets ...string) {
	t.Helper()
	for _, s := range secrets {
		if strings.Contains(text, s) {
			t.Errorf("output holds secret %q", s)
		}
	}
	_ = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, s := range secrets {
			if strings.Contains(string(b), s) {
				t.Errorf("%s holds secret %q", path, s)
			}
		}
		return nil
	})
}

// Without --ca the attack stops before sending, on a certificate error that says what to do;
// with --insecure it runs and warns.
func TestAttackTLSCertificate(t *testing.T) {
	t.Parallel()
	_, cert := testPKI(t)
	url, _ := startTLSGateway(t, cert, limiter.BucketPolicy{Rate: 20, Burst: 5}, map[string]string{"tenant-0": "t0", "tenant-1": "t1"})
	dir := t.TempDir()
	args := []string{"attack", "-q", "--url", url, "--rate", "50", "--duration", "1s", "--tenants", "2", "--policy", "rate=20,burst=5"}
	code, stdout, stderr := execRatelab(t, dir, append(args, "--out", filepath.Join(dir, "strict"))...)
	if code != 1 || !strings.Contains(stderr, "certificate") || !strings.Contains(stderr, "--ca") || !strings.Contains(stderr, "--insecure") {
		t.Errorf("without --ca: exit %d, want 1 with a certificate error naming --ca and --insecure\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	code, stdout, stderr = execRatelab(t, dir, append(args, "--insecure", "--out", filepath.Join(dir, "insecure"))...)
	if code != 0 || !strings.Contains(stderr, "warning: --insecure") {
		t.Errorf("--insecure: exit %d, want 0 and a warning\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	sum, err := results.ReadSummary(filepath.Join(dir, "insecure", results.SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	if sum.Outcomes.Errors != 0 || sum.Outcomes.Allowed == 0 || !strings.Contains(sum.Load.Note, "without certificate verification") {
		t.Errorf("--insecure run: allowed %d errors %d, note %q", sum.Outcomes.Allowed, sum.Outcomes.Errors, sum.Load.Note)
	}
}
