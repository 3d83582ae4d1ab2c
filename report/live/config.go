package live

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"time"
)

// Config is what a command's flags say about live metrics (--metrics-listen, --metrics-push,
// --metrics-grace), so that every command that drives runs wires them the same way.
type Config struct {
	// Listen is the address to serve /metrics on (host:port); "" serves none. Loopback only
	// unless AllowRemote.
	Listen string
	// Push is the remote-write URL (http or https) to push to; "" pushes nothing.
	Push string
	// PushEvery is how often to push while the run goes; 0 means DefaultPushEvery.
	PushEvery time.Duration
	// Grace is how long Finish keeps serving the final totals; 0 means DefaultGrace.
	Grace time.Duration
	// AllowRemote lets Listen be an address other hosts can reach.
	AllowRemote bool
}

// Enabled reports whether c asks for a server or a push.
func (c Config) Enabled() bool { return c.Listen != "" || c.Push != "" }

// Validate reports every problem of c at once: a Listen address that is not host:port or not
// loopback (without AllowRemote), a Push URL that is not http(s), a negative duration.
func (c Config) Validate() error {
	var errs []error
	if c.Listen != "" {
		if err := CheckListen(c.Listen, c.AllowRemote); err != nil {
			errs = append(errs, fmt.Errorf("metrics listen: %w", err))
		}
	}
	if c.Push != "" {
		u, err := url.Parse(c.Push)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("metrics push %q: want an http(s) URL such as http://127.0.0.1:9090/api/v1/write", c.Push))
		}
	}
	if c.PushEvery < 0 || c.Grace < 0 {
		errs = append(errs, fmt.Errorf("metrics push interval %v, grace %v: must not be negative", c.PushEvery, c.Grace))
	}
	return errors.Join(errs...)
}

// Start validates c and starts the metrics of run runID of scenario as it says, with opts
// after c's own options; nil (and no error) when c is not Enabled, which every Run method
// that a caller wires unconditionally (TeeInterval, TeeProgress, Finish, Close) accepts.
func (c Config) Start(scenario, runID string, opts ...Option) (*Run, error) {
	if !c.Enabled() {
		return nil, nil
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	own := []Option{WithListen(c.Listen), WithPush(c.Push), WithPushEvery(c.PushEvery)}
	if c.Grace > 0 {
		own = append(own, WithGrace(c.Grace))
	}
	return Start(scenario, runID, append(own, opts...)...)
}

// RunID is the run id of a run whose directory is dir: its last element, as the run
// directories name runs (out/<scenario>-<yyyymmdd-hhmmss>). Without a directory it is the name
// a driver would give one now, which can differ by a second from the one it then gives: choose
// the directory before the run (Options.Out) for the two to match.
func RunID(scenario, dir string) string {
	if dir != "" {
		return filepath.Base(dir)
	}
	return scenario + "-" + time.Now().Format("20060102-150405")
}

// CheckListen returns ErrNotLoopback unless addr's host is a loopback IP or "localhost", or
// allowRemote is set: live metrics name the run and its results, and an empty host listens on
// every interface.
func CheckListen(addr string, allowRemote bool) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("live: listen address %q: %w", addr, err)
	}
	if allowRemote || host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("%w: %q (use 127.0.0.1:PORT)", ErrNotLoopback, addr)
}
