package docker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"time"

	"github.com/moby/moby/client"

	"ratelab/cluster"
)

// Kill SIGKILLs the node's container (docker kill -s KILL: a crash, no shutdown) and returns
// once the engine reports it stopped.
func (c *Cluster) Kill(addr string) error {
	i, nd, err := c.find(addr)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), cluster.DefaultStopTimeout+stopGrace)
	defer cancel()
	if _, err := c.cli.ContainerKill(ctx, nd.id, client.ContainerKillOptions{Signal: "KILL"}); err != nil {
		return fmt.Errorf("docker: kill node %s (container %.12s): %w", addr, nd.id, err)
	}
	c.mu.Lock()
	nd.killed = true
	c.mu.Unlock()
	t := time.NewTicker(pollEvery)
	defer t.Stop()
	for {
		st, err := c.cli.ContainerInspect(ctx, nd.id, client.ContainerInspectOptions{})
		if err == nil && st.Container.State != nil && !st.Container.State.Running {
			return c.refreshPid(ctx, i)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("docker: node %s (container %.12s) still running after kill: %w", addr, nd.id, context.Cause(ctx))
		case <-t.C:
		}
	}
}

// Pause freezes the node's container (docker pause, the cgroup freezer): its sockets stay open
// and it answers nothing, which peers and clients see as timeouts. Resume undoes it.
func (c *Cluster) Pause(addr string) error {
	_, nd, err := c.find(addr)
	if err != nil {
		return err
	}
	if _, err := c.cli.ContainerPause(context.Background(), nd.id, client.ContainerPauseOptions{}); err != nil {
		return fmt.Errorf("docker: pause node %s (container %.12s): %w", addr, nd.id, err)
	}
	return nil
}

// Resume unpauses the node's container.
func (c *Cluster) Resume(addr string) error {
	_, nd, err := c.find(addr)
	if err != nil {
		return err
	}
	if _, err := c.cli.ContainerUnpause(context.Background(), nd.id, client.ContainerUnpauseOptions{}); err != nil {
		return fmt.Errorf("docker: resume node %s (container %.12s): %w", addr, nd.id, err)
	}
	return nil
}

// Restart stops the node's container if it runs (SIGTERM, SIGKILL after a grace period), starts
// it again and returns once it answers PING. Its nodes.conf is still in the container, so it
// rejoins with its node ID; it does not wait for the cluster to converge: use WaitHealthy.
func (c *Cluster) Restart(ctx context.Context, addr string) error {
	i, nd, err := c.find(addr)
	if err != nil {
		return err
	}
	st, err := c.cli.ContainerInspect(ctx, nd.id, client.ContainerInspectOptions{})
	if err != nil {
		return fmt.Errorf("docker: restart node %s: inspect: %w", addr, err)
	}
	if s := st.Container.State; s != nil && s.Running {
		if s.Paused {
			_, _ = c.cli.ContainerUnpause(ctx, nd.id, client.ContainerUnpauseOptions{})
		}
		grace := int(stopGrace / time.Second)
		if _, err := c.cli.ContainerStop(ctx, nd.id, client.ContainerStopOptions{Timeout: &grace}); err != nil {
			return fmt.Errorf("docker: restart node %s: stop: %w", addr, err)
		}
	}
	if _, err := c.cli.ContainerStart(ctx, nd.id, client.ContainerStartOptions{}); err != nil {
		return fmt.Errorf("docker: restart node %s: start: %w", addr, err)
	}
	c.mu.Lock()
	nd.killed = false
	c.mu.Unlock()
	if err := c.waitServing(ctx, i); err != nil {
		return err
	}
	return c.refreshPid(ctx, i)
}

// SetLatency delays every chunk the node's proxy forwards, both ways, by delay ± jitter (a
// request/reply round trip gains about 2 x delay), until SetLatency(addr, 0, 0). Replication to
// the node's replicas flows through the proxy too, so a latency fault builds real replication
// lag. Without Options.Cluster.Proxy it wraps cluster.ErrUnsupported.
func (c *Cluster) SetLatency(addr string, delay, jitter time.Duration) error {
	_, nd, err := c.find(addr)
	if err != nil {
		return err
	}
	if nd.px == nil {
		return fmt.Errorf("docker: latency on node %s: %w: the cluster was started without latency proxies (docker.Options.Cluster.Proxy)", addr, cluster.ErrUnsupported)
	}
	nd.px.SetLatency(delay, jitter)
	return nil
}

// Partition wraps cluster.ErrUnsupported: the containers' cluster bus does not pass through
// proxies of this process (the local provider's Options.Partitionable does this).
func (c *Cluster) Partition(_ context.Context, isolated []string) error {
	return fmt.Errorf("docker: partition of %v: %w: the docker provider has no proxies on the cluster bus; use provider local", isolated, cluster.ErrUnsupported)
}

// Heal wraps cluster.ErrUnsupported, as Partition does.
func (c *Cluster) Heal(context.Context) error {
	return fmt.Errorf("docker: heal: %w: the docker provider cannot partition; use provider local", cluster.ErrUnsupported)
}

// NodesSeenBy reads CLUSTER NODES of the node on addr.
func (c *Cluster) NodesSeenBy(ctx context.Context, addr string) ([]cluster.NodeView, error) {
	return c.ctl.NodesSeenBy(ctx, addr)
}

// Close removes every container (and its anonymous volume) and releases the ports. Idempotent.
func (c *Cluster) Close() error {
	c.closeOnce.Do(func() { c.closeErr = c.close() })
	return c.closeErr
}

func (c *Cluster) close() error {
	c.mu.Lock()
	c.closed = true
	nodes := append([]*node(nil), c.nodes...)
	c.mu.Unlock()
	var errs []error
	if c.ctl != nil {
		errs = append(errs, c.ctl.Close())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, nd := range nodes {
		if nd == nil {
			continue
		}
		if _, err := c.cli.ContainerRemove(ctx, nd.id, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true}); err != nil {
			errs = append(errs, fmt.Errorf("docker: remove node %s (container %.12s): %w", nd.addr, nd.id, err))
		}
	}
	for _, px := range c.proxies {
		if px != nil {
			errs = append(errs, px.Close())
		}
	}
	cluster.ReleasePorts(c.ports)
	if c.cli != nil {
		errs = append(errs, c.cli.Close())
	}
	return errors.Join(errs...)
}

// newClient connects to the Docker engine named by the environment (DOCKER_HOST, default the
// local socket) and checks that it answers; otherwise it wraps ErrNoDocker.
func newClient(ctx context.Context) (*client.Client, error) {
	cli, err := client.New(client.FromEnv)
	if err != nil {
		return nil, fmt.Errorf("docker: %w: %v; install Docker or set DOCKER_HOST", ErrNoDocker, err)
	}
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := cli.Ping(pctx, client.PingOptions{}); err != nil {
		_ = cli.Close()
		return nil, fmt.Errorf("docker: %w: %v; start the Docker engine or set DOCKER_HOST", ErrNoDocker, err)
	}
	return cli, nil
}

// disableRyuk switches off testcontainers' Ryuk reaper unless the user configured it: Ryuk is a
// container whose image must be pulled, which fails without registry access, and Close (plus
// sweepOrphans at the next Start) removes ratelab's containers anyway. testcontainers reads the
// variable once, at its first use.
func disableRyuk() {
	if _, set := os.LookupEnv("TESTCONTAINERS_RYUK_DISABLED"); !set {
		_ = os.Setenv("TESTCONTAINERS_RYUK_DISABLED", "true")
	}
}

// sweepOrphans removes containers whose owning ratelab process no longer runs (it was
// SIGKILLed, so its Close never ran). Failures are logged, not returned: they do not stop a start.
func sweepOrphans(ctx context.Context, cli *client.Client, logf func(string, ...any)) {
	res, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: client.Filters{}.Add("label", labelOwner)})
	if err != nil {
		logf("docker: list ratelab containers: %v", err)
		return
	}
	for _, s := range res.Items {
		pid, err := strconv.Atoi(s.Labels[labelOwner])
		if err != nil || pid <= 0 || processAlive(pid) {
			continue
		}
		if _, err := cli.ContainerRemove(ctx, s.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true}); err != nil {
			logf("docker: remove orphan container %.12s: %v", s.ID, err)
			continue
		}
		logf("docker: removed container %.12s left by ratelab pid %d, which no longer runs", s.ID, pid)
	}
}

// processAlive reports whether pid exists (signal 0).
func processAlive(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	err = p.Signal(syscall.Signal(0))
	return err == nil || errors.Is(err, syscall.EPERM)
}
