package gubernator

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// probeKeys is how many keys a probe asks for: spread over the hash ring, they give every daemon
// of a cluster of up to 16 some to own (a daemon owns none of 32 with probability (1-1/N)^32:
// about 1e-5 at N = 3).
const probeKeys = 32

// probeBody is one GetRateLimits call for the probe keys, hits 0 in a namespace of their own
// (ratelab-probe): it reads the keys' buckets, forwarding each to its owner, and debits nothing
// the load uses.
var probeBody = func() []byte {
	type req struct {
		Name      string `json:"name"`
		UniqueKey string `json:"unique_key"`
		Hits      int64  `json:"hits"`
		Limit     int64  `json:"limit"`
		Duration  int64  `json:"duration"`
	}
	var body struct {
		Requests []req `json:"requests"`
	}
	for i := range probeKeys {
		body.Requests = append(body.Requests, req{Name: "ratelab-probe", UniqueKey: "probe-" + strconv.Itoa(i), Limit: 1, Duration: time.Minute.Milliseconds()})
	}
	b, _ := json.Marshal(body)
	return b
}()

// ServingStable is how long WaitServing wants every probe to succeed: after a restart a peer's
// gRPC client goes on writing to the connection the daemon's death broke for a second or two
// (on loopback a few percent of the decisions failed for 1-2 s after the restarted daemon
// answered), so one good probe is not recovery.
const ServingStable = time.Second

// WaitServing returns once every daemon has decided a batch of probe keys spread over the hash
// ring without an error, round after round, for ServingStable — each runs, answers and reaches
// every key's owner — or with the last failure and its daemon's log tail when ReadyTimeout passes
// or a daemon exits. Unlike WaitHealthy it does not wait out the peer errors gubernator's health
// check reports for 5 minutes after a fault.
func (c *Cluster) WaitServing(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, c.opts.ReadyTimeout)
	defer cancel()
	hc := &http.Client{Timeout: time.Second}
	var since time.Time // the start of the current run of good rounds
	for {
		i, err := c.probeAll(ctx, hc)
		switch {
		case err == nil && since.IsZero():
			since = time.Now()
		case err == nil && time.Since(since) >= ServingStable:
			return nil
		case err != nil:
			since = time.Time{}
			if d := c.daemons[i]; d.proc == nil || d.proc.exited() {
				return fmt.Errorf("gubernator: daemon %d exited: %s", i, tail(d.log))
			}
		}
		select {
		case <-ctx.Done():
			if err == nil {
				return fmt.Errorf("gubernator: not serving for %v: %w", ServingStable, ctx.Err())
			}
			return fmt.Errorf("gubernator: daemon %d not serving (%v): %w; log: %s", i, err, ctx.Err(), tail(c.daemons[i].log))
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// probeAll probes every daemon in turn: the first that fails and why.
func (c *Cluster) probeAll(ctx context.Context, hc *http.Client) (int, error) {
	for i, d := range c.daemons {
		if d.proc == nil || d.proc.exited() {
			return i, fmt.Errorf("daemon %d is not running", i)
		}
		if err := probe(ctx, hc, d.http); err != nil {
			return i, err
		}
	}
	return 0, nil
}

// probe asks the daemon on addr for the probe keys: nil when every one was decided.
func probe(ctx context.Context, hc *http.Client, addr string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+"/v1/GetRateLimits", bytes.NewReader(probeBody))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var out struct {
		Responses []struct {
			Error string `json:"error"`
		} `json:"responses"`
		Message string `json:"message"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return fmt.Errorf("probe of %s: %w", addr, err)
	}
	if resp.StatusCode != http.StatusOK || len(out.Responses) != probeKeys {
		return fmt.Errorf("probe of %s: HTTP %d, %d responses: %s", addr, resp.StatusCode, len(out.Responses), out.Message)
	}
	for _, r := range out.Responses {
		if r.Error != "" {
			return fmt.Errorf("probe of %s: %s", addr, r.Error)
		}
	}
	return nil
}
