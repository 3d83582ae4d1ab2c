package attack

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/textproto"
	"net/url"
	"slices"
	"strings"
)

// KeyPlaceholder stands for the tenant's API key in Options.KeyFormat.
const KeyPlaceholder = "{key}"

// Redacted replaces a secret header value wherever ratelab would print or write it.
const Redacted = "[redacted]"

// sensitiveWords mark a header name whose value may be a credential: such values are never
// printed, logged or written (see Sensitive).
var sensitiveWords = []string{"authorization", "cookie", "token", "secret", "password", "api-key", "apikey", "session", "signature"}

// Sensitive reports whether header name may carry a secret: Authorization, Proxy-Authorization,
// Cookie, Set-Cookie, any name holding token, secret, password, api-key, apikey, session or
// signature, and keyHeader (the header carrying the tenants' keys).
func Sensitive(name, keyHeader string) bool {
	n := strings.ToLower(name)
	if keyHeader != "" && strings.EqualFold(name, keyHeader) {
		return true
	}
	for _, w := range sensitiveWords {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

// redactHeaders replaces the values of h's sensitive headers (see Sensitive) in place.
func redactHeaders(h http.Header, keyHeader string) {
	for name, vs := range h {
		if Sensitive(name, keyHeader) {
			for i := range vs {
				vs[i] = Redacted
			}
		}
	}
}

// ParseHeader reads one extra request header written "Name: value" (curl's -H form). The error
// never repeats a sensitive header's value.
func ParseHeader(s string) (name, value string, err error) {
	name, value, ok := strings.Cut(s, ":")
	name, value = strings.TrimSpace(name), strings.TrimSpace(value)
	show := s
	switch {
	case ok && Sensitive(name, ""):
		show = name + ": " + Redacted
	case !ok && Sensitive(s, ""):
		// No colon: where the name ends is unknown, so nothing past the first word is shown.
		show = strings.Fields(s)[0] + " " + Redacted
	}
	if !ok || name == "" {
		return "", "", fmt.Errorf("%w: header %q: want Name: value, e.g. -H 'Accept: application/json'", ErrInvalid, show)
	}
	if !validToken(name) {
		return "", "", fmt.Errorf("%w: header %q: %q is not a header name (letters, digits and !#$%%&'*+-.^_`|~ only)", ErrInvalid, show, name)
	}
	if strings.ContainsAny(value, "\r\n\x00") {
		return "", "", fmt.Errorf("%w: header %q: the value holds a line break or NUL; give one line", ErrInvalid, show)
	}
	return name, value, nil
}

// validToken reports whether s is an HTTP token (RFC 9110 tchar*), as header names and methods
// must be.
func validToken(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		case strings.ContainsRune("!#$%&'*+-.^_`|~", r):
		default:
			return false
		}
	}
	return true
}

// validateRequest adds the problems of o's request options (method, headers, key format, keys,
// TLS) to bad.
func (o Options) validateRequest(bad func(format string, a ...any)) {
	if !validToken(o.Method) {
		bad("method %q: want an HTTP method such as GET, POST or PUT", o.Method)
	}
	if !strings.Contains(o.KeyFormat, KeyPlaceholder) {
		bad("key format %q: it must contain %s where the tenant's key goes, e.g. 'Bearer {key}'", o.KeyFormat, KeyPlaceholder)
	} else if strings.ContainsAny(o.KeyFormat, "\r\n\x00") {
		bad("key format: holds a line break or NUL; give one line such as 'Bearer {key}'")
	}
	reserved := []string{o.KeyHeader, ReqHeader, o.CostHeader, o.TimeHeader}
	for name, vs := range o.Header {
		for _, r := range reserved {
			if r != "" && strings.EqualFold(name, r) {
				bad("header %s: ratelab sets it on every request (key, cost, time or request-index header); drop the -H or choose another --key-header", name)
			}
		}
		if !validToken(name) {
			bad("header %q: not a header name", name)
		}
		for _, v := range vs {
			if strings.ContainsAny(v, "\r\n\x00") {
				bad("header %s: a value holds a line break or NUL", name)
			}
		}
	}
	if len(o.Keys) > 0 {
		if o.Tenants != len(o.Keys) {
			bad("tenants %d: the keys file has %d keys, one per tenant; drop --tenants or make them agree", o.Tenants, len(o.Keys))
		}
		for i, k := range o.Keys {
			if strings.TrimSpace(k) == "" || strings.ContainsAny(k, "\r\n\x00") {
				bad("keys: key %d (line %d) is empty or holds a control character; one key per line, no blank lines", i, i+1)
				break
			}
		}
	}
	if len(o.CA) > 0 && o.Insecure {
		bad("ca and insecure: --insecure skips the verification --ca is for; give one of them")
	}
	if len(o.CA) > 0 && !x509.NewCertPool().AppendCertsFromPEM(o.CA) {
		bad("ca: no PEM certificate found; give a file of -----BEGIN CERTIFICATE----- blocks")
	}
}

// tlsConfig is the client TLS configuration of an https attack: the system's roots plus o.CA's
// certificates, or no verification with o.Insecure. nil for plain http.
func (o Options) tlsConfig() (*tls.Config, error) {
	if !o.usesTLS() {
		return nil, nil
	}
	if o.Insecure {
		return &tls.Config{InsecureSkipVerify: true}, nil //nolint:gosec // asked for with --insecure, and warned about
	}
	if len(o.CA) == 0 {
		return &tls.Config{}, nil
	}
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(o.CA) {
		return nil, fmt.Errorf("%w: ca: no PEM certificate found", ErrInvalid)
	}
	return &tls.Config{RootCAs: pool}, nil
}

// usesTLS reports whether any target URL is https.
func (o Options) usesTLS() bool {
	for _, u := range o.urls() {
		if p, err := url.Parse(u); err == nil && p.Scheme == "https" {
			return true
		}
	}
	return false
}

// requestNote says how requests were sent, for the summary's note: the method, the body's size,
// the extra headers' names (never their values) and TLS.
func (o Options) requestNote() string {
	s := "requests: " + o.Method
	if len(o.Body) > 0 {
		s += fmt.Sprintf(" with a %d-byte body", len(o.Body))
	}
	names := make([]string, 0, len(o.Header))
	for name := range o.Header {
		names = append(names, textproto.CanonicalMIMEHeaderKey(name))
	}
	if len(names) > 0 {
		slices.Sort(names)
		s += ", extra headers " + strings.Join(names, " ") + " (values not recorded)"
	}
	s += ", key in " + textproto.CanonicalMIMEHeaderKey(o.KeyHeader)
	if o.KeyFormat != KeyPlaceholder {
		s += " as " + o.KeyFormat
	}
	if len(o.Keys) > 0 {
		s += " (keys from a file; tenants named tenant-i here)"
	}
	switch {
	case !o.usesTLS():
		s += ", plain HTTP (no TLS)"
	case o.Insecure:
		s += ", TLS without certificate verification (--insecure)"
	case len(o.CA) > 0:
		s += ", TLS verified against the system roots plus --ca"
	default:
		s += ", TLS verified against the system roots"
	}
	return s
}

// keyValues returns the key header's value for a tenant: KeyFormat with the tenant's key
// (Keys[tenant], or its generated name) in place of KeyPlaceholder. It is built once per attack
// and keeps only those two fields, so the targeter's call per request copies no Options.
func (o Options) keyValues() func(name string, tenant uint32) string {
	format, keys := o.KeyFormat, o.Keys
	return func(name string, tenant uint32) string {
		key := name
		if int(tenant) < len(keys) {
			key = keys[tenant]
		}
		if format == KeyPlaceholder {
			return key
		}
		return strings.ReplaceAll(format, KeyPlaceholder, key)
	}
}

// ErrTLS reports that a target's TLS handshake failed before the attack began.
var ErrTLS = errors.New("attack: TLS handshake failed")

// checkTLS shakes hands once with every https target before the attack (no HTTP request, so
// no token is spent): a certificate the client does not trust fails here, once and clearly,
// instead of as every request's error.
func (o Options) checkTLS(tc *tls.Config) error {
	if tc == nil {
		return nil
	}
	for _, raw := range o.urls() {
		u, err := url.Parse(raw)
		if err != nil || u.Scheme != "https" {
			continue
		}
		addr := u.Host
		if u.Port() == "" {
			addr = net.JoinHostPort(u.Hostname(), "443")
		}
		cfg := tc.Clone()
		cfg.ServerName = u.Hostname()
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: o.Timeout}, "tcp", addr, cfg)
		if err != nil {
			return fmt.Errorf("%w: %s: %v; trust the server's CA with --ca FILE (PEM), or skip verification with --insecure", ErrTLS, raw, err)
		}
		conn.Close()
	}
	return nil
}
