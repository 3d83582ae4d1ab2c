package gubernator

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"syscall"
)

// Kill SIGKILLs daemon i and waits for its exit. Its peers keep it on the ring (the peer list is
// static): requests for the keys it owns fail until Restart, as in a deployment whose discovery
// has not noticed yet.
func (c *Cluster) Kill(i int) error {
	d, err := c.running(i)
	if err != nil {
		return err
	}
	if err := d.proc.cmd.Process.Kill(); err != nil {
		return fmt.Errorf("gubernator: kill daemon %d: %w", i, err)
	}
	<-d.proc.done
	return nil
}

// Pause SIGSTOPs daemon i: it keeps its sockets and answers nothing until Resume.
func (c *Cluster) Pause(i int) error { return c.signal(i, syscall.SIGSTOP) }

// Resume SIGCONTs daemon i.
func (c *Cluster) Resume(i int) error { return c.signal(i, syscall.SIGCONT) }

func (c *Cluster) signal(i int, sig syscall.Signal) error {
	d, err := c.running(i)
	if err != nil {
		return err
	}
	if err := d.proc.cmd.Process.Signal(sig); err != nil {
		return fmt.Errorf("gubernator: signal %v to daemon %d: %w", sig, i, err)
	}
	return nil
}

// running returns daemon i if its process runs.
func (c *Cluster) running(i int) (*daemon, error) {
	if i < 0 || i >= len(c.daemons) {
		return nil, fmt.Errorf("gubernator: daemon %d: the cluster has daemons 0..%d", i, len(c.daemons)-1)
	}
	d := c.daemons[i]
	if d.proc == nil || d.proc.exited() {
		return nil, fmt.Errorf("gubernator: daemon %d is not running; Restart it first", i)
	}
	return d, nil
}

// Restart stops daemon i if it runs and starts it again on the same ports with the same peers:
// its cache starts empty (gubernator keeps its counts in memory). It returns once the daemon
// serves (answers its health check); its peers may report themselves unhealthy for minutes after
// the errors they met while it was down (see WaitHealthy).
func (c *Cluster) Restart(ctx context.Context, i int) error {
	if i < 0 || i >= len(c.daemons) {
		return fmt.Errorf("gubernator: daemon %d: the cluster has daemons 0..%d", i, len(c.daemons)-1)
	}
	if err := stop(c.daemons[i].proc); err != nil {
		return err
	}
	if err := c.start(i); err != nil {
		return err
	}
	return c.wait(ctx, "answering", answered, i)
}

// Partition cuts daemon i off every peer, both ways: the forwarders it dials its peers through
// and those its peers dial it through refuse and reset every connection. Clients still reach
// its HTTP gateway, and it still answers them (with errors for what it must ask a peer). It
// adds to an earlier partition; Heal undoes every one.
func (c *Cluster) Partition(i int) error {
	if i < 0 || i >= len(c.daemons) {
		return fmt.Errorf("gubernator: daemon %d: the cluster has daemons 0..%d", i, len(c.daemons)-1)
	}
	for j := range c.daemons {
		if j != i {
			c.routes[i][j].Cut()
			c.routes[j][i].Cut()
		}
	}
	return nil
}

// Heal restores every link a Partition cut.
func (c *Cluster) Heal() {
	for _, row := range c.routes {
		for _, f := range row {
			if f != nil {
				f.Restore()
			}
		}
	}
}

// healthReply is /v1/HealthCheck's answer (gubernator's HealthCheckResp in JSON).
type healthReply struct {
	Status    string `json:"status"`
	Message   string `json:"message"`
	PeerCount int    `json:"peer_count"`
}

func (h healthReply) healthy(peers int) bool { return h.Status == "healthy" && h.PeerCount == peers }

// health asks the daemon on addr for its health check.
func health(ctx context.Context, hc *http.Client, addr string) (healthReply, error) {
	var h healthReply
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/v1/HealthCheck", nil)
	if err != nil {
		return h, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return h, err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
		return h, fmt.Errorf("health check of %s: %w", addr, err)
	}
	return h, nil
}
