package main

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"ratelab/results"
	"ratelab/run/attack"
)

// requestFlags are attack's flags for the requests themselves: method, headers, body, keys and
// TLS, read into attack.Options by apply.
type requestFlags struct {
	headers  []string
	body     string
	bodyFile string
	keysFile string
	caFile   string
}

func (f *requestFlags) register(cmd *cobra.Command, o *attack.Options) {
	fl := cmd.Flags()
	fl.StringVar(&o.Method, "method", http.MethodGet, "HTTP `METHOD` of every request")
	fl.StringArrayVarP(&f.headers, "header", "H", nil, "extra request `HEADER`, written 'Name: value'; repeatable; values of Authorization-like headers are never printed or written")
	fl.StringVar(&f.body, "body", "", "request `BODY`")
	fl.StringVar(&f.bodyFile, "body-file", "", "read the request body from `FILE` (not with --body)")
	fl.StringVar(&o.KeyFormat, "key-format", attack.KeyPlaceholder, "`FORMAT` of the key header's value, {key} standing for the tenant's key; with --key-header Authorization, 'Bearer {key}' sends bearer tokens")
	fl.StringVar(&f.keysFile, "keys-file", "", "`FILE` of the tenants' API keys, one per line (line i is tenant i; the line count sets --tenants); reports name tenants tenant-i, never by key")
	fl.StringVar(&f.caFile, "ca", "", "PEM `FILE` of CA certificates trusted for https URLs in addition to the system's roots")
	fl.BoolVar(&o.Insecure, "insecure", false, "https without certificate verification (prints a warning)")
}

// apply reads the flags' files and values into o; every error names its flag, the value and
// the fix, and never repeats a secret.
func (f *requestFlags) apply(cmd *cobra.Command, o *attack.Options) error {
	var errs []error
	for _, hv := range f.headers {
		name, value, err := attack.ParseHeader(hv)
		if err != nil {
			errs = append(errs, fmt.Errorf("-H: %w", err))
			continue
		}
		if o.Header == nil {
			o.Header = http.Header{}
		}
		o.Header.Add(name, value)
	}
	switch {
	case f.body != "" && f.bodyFile != "":
		errs = append(errs, errors.New("--body and --body-file: give the body one way, not both"))
	case f.bodyFile != "":
		b, err := os.ReadFile(f.bodyFile)
		if err != nil {
			errs = append(errs, fmt.Errorf("--body-file: %w", err))
		}
		o.Body = b
	case f.body != "":
		o.Body = []byte(f.body)
	}
	if f.keysFile != "" {
		keys, err := readKeys(f.keysFile)
		switch {
		case err != nil:
			errs = append(errs, err)
		case cmd.Flags().Changed("tenants") && o.Tenants != len(keys):
			errs = append(errs, fmt.Errorf("--keys-file %s has %d keys but --tenants is %d: the file's lines are the tenants; drop --tenants", f.keysFile, len(keys), o.Tenants))
		default:
			o.Keys, o.Tenants = keys, len(keys)
		}
	}
	if f.caFile != "" {
		pem, err := os.ReadFile(f.caFile)
		if err != nil {
			errs = append(errs, fmt.Errorf("--ca: %w", err))
		}
		o.CA = pem
	}
	return errors.Join(errs...)
}

// readKeys reads a keys file: one key per line, a final newline optional, CR LF accepted.
func readKeys(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--keys-file: %w", err)
	}
	text := strings.TrimSuffix(strings.ReplaceAll(string(b), "\r\n", "\n"), "\n")
	if text == "" {
		return nil, fmt.Errorf("--keys-file %s: no keys; write one API key per line", path)
	}
	keys := strings.Split(text, "\n")
	for i, k := range keys {
		if strings.TrimSpace(k) == "" {
			return nil, fmt.Errorf("--keys-file %s: line %d is blank; write one API key per line, no blank lines", path, i+1)
		}
	}
	return keys, nil
}

// warnInsecure tells the user, on stderr, that --insecure turns verification off.
func warnInsecure(w io.Writer, o attack.Options) {
	if o.Insecure {
		fmt.Fprintln(w, "warning: --insecure: TLS certificates are not verified; anyone on the path can pose as the target")
	}
}

// printHonesty writes the header-honesty line of the text summary.
func printHonesty(w io.Writer, h *results.HeaderHonesty) {
	if h == nil {
		fmt.Fprintln(w, "  headers      no rate-limit headers to check")
		return
	}
	var parts []string
	var checked int64
	for _, kind := range []string{attack.LieRetryEarlyAllow, attack.LieRetryLateDeny, attack.LieRemainingDeny,
		attack.LieRemainingAllow, attack.LieRemainingAboveLimit, attack.LieResetBackwards} {
		if n := h.Checked[kind]; n > 0 {
			checked += n
			parts = append(parts, fmt.Sprintf("%s %d/%d", kind, h.Lies[kind], n))
		}
	}
	fmt.Fprintf(w, "  headers      %d lies in %d checks (tolerance %.0f ms): %s\n", h.TotalLies(), checked, h.ToleranceMs, strings.Join(parts, ", "))
}
