package live

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// pusher sends a Gatherer's metrics to a remote-write URL every so often until stopped, and
// once more when stopped, so that a run shorter than any scrape interval still lands.
type pusher struct {
	url    string
	g      prometheus.Gatherer
	client *http.Client
	logf   func(string, ...any)

	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex // one push at a time: the loop's and stop's
	failed bool       // a failure was logged; the next one is not
}

func startPusher(url string, g prometheus.Gatherer, client *http.Client, every time.Duration, logf func(string, ...any)) *pusher {
	p := &pusher{url: url, g: g, client: client, logf: logf, done: make(chan struct{})}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	go p.loop(every)
	return p
}

func (p *pusher) loop(every time.Duration) {
	defer close(p.done)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-p.ctx.Done():
			return
		case <-t.C:
			if err := p.push(p.ctx); err != nil && !p.failed && p.ctx.Err() == nil {
				p.failed = true
				p.logf("live: push to %s: %v (further failures not logged)", p.url, err)
			}
		}
	}
}

// stop ends the loop and makes the final push.
func (p *pusher) stop(ctx context.Context) error {
	p.cancel()
	<-p.done
	return p.push(ctx)
}

// push gathers once and sends the samples with one timestamp, now.
func (p *pusher) push(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	fams, err := p.g.Gather()
	if err != nil {
		return fmt.Errorf("live: gather: %w", err)
	}
	body := encodeWriteRequest(fams, time.Now().UnixMilli())
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.url, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("live: push: %w", err)
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	req.Header.Set("Content-Encoding", "snappy")
	req.Header.Set("X-Prometheus-Remote-Write-Version", "0.1.0")
	req.Header.Set("User-Agent", "ratelab-live")
	resp, err := p.client.Do(req)
	if err != nil {
		return fmt.Errorf("live: push: %w", err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("live: push to %s: %s: %s", p.url, resp.Status, bytes.TrimSpace(msg))
	}
	return nil
}
