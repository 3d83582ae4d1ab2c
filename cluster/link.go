package cluster

import (
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// halfCloseGrace bounds how long a link outlives its client's end of the connection while
// redis-server has not finished (see pipe.graceOnEOF). A live node answers in microseconds; a
// paused one holds the link only this long.
const halfCloseGrace = time.Second

// link is one client connection through a proxy: two independent directions (pipes), up
// (client -> redis-server) and down (redis-server -> client).
type link struct {
	p              *proxy
	client, server *net.TCPConn
	src            netip.Addr // the client's source address: what a cut by source matches
	up, down       *pipe
	done           chan struct{} // closed by abort
	once           sync.Once
	open           atomic.Int32 // directions still running; the last one to end closes the link
}

func newLink(p *proxy, client, server *net.TCPConn) (*link, error) {
	l := &link{p: p, client: client, server: server, src: sourceOf(client), done: make(chan struct{})}
	var err error
	if l.up, err = newPipe(l, client, server); err != nil {
		return nil, err
	}
	l.up.graceOnEOF = true
	if l.down, err = newPipe(l, server, client); err != nil {
		_ = l.up.w.close()
		return nil, err
	}
	l.open.Store(2)
	return l, nil
}

// abort closes both connections and wakes every goroutine of the link. Idempotent.
func (l *link) abort() {
	l.once.Do(func() {
		close(l.done)
		_ = l.client.Close()
		_ = l.server.Close()
		_ = l.up.w.close()
		_ = l.down.w.close()
		l.p.forget(l)
	})
}

// directionDone is called once per pipe when its writer has delivered its last chunk.
func (l *link) directionDone() {
	if l.open.Add(-1) == 0 {
		l.abort()
	}
}

// chunk is one read's worth of bytes and the time it may be written; eof marks the end of the
// direction (then buf is nil).
type chunk struct {
	buf     *[]byte
	n       int
	release time.Time
	eof     bool
}

// chunkPool recycles the buffers of delayed chunks: a forwarded chunk allocates nothing in the
// steady state.
var chunkPool = sync.Pool{New: func() any { b := make([]byte, proxyChunk); return &b }}

// pipe forwards one direction. The reader stamps every chunk with its release time (arrival +
// sampled delay) and queues it; the writer writes chunks in queue order, each no earlier than its
// release time, so bytes are never reordered even when jitter makes a later chunk's release time
// earlier (it then waits for the one ahead of it). With no delay and nothing queued, the reader
// writes the chunk itself: pass-through costs no goroutine hand-off.
//
// What an idle connection costs matters: go-redis keeps a pool per node, and during a pause
// every timed-out connection is replaced while its link waits out halfCloseGrace, so a soak
// holds hundreds of links and churns through hundreds more a second. The reader therefore
// blocks on a small buffer of its own (readBuf), not on a pooled chunk, and the writer goroutine
// and its queue exist only once the direction has delayed a chunk (startWriter): a link that
// never saw a latency fault is two goroutines and 2 x readBuf. TestProxyIdleLinkFootprint logs
// what an idle link costs.
type pipe struct {
	l        *link
	src, dst *net.TCPConn
	q        chan chunk // nil until startWriter
	// pending counts chunks queued or being written. Only the reader increments it, so when the
	// reader sees 0 the writer is idle and a direct write cannot overtake anything.
	pending atomic.Int32
	w       *waiter
	// graceOnEOF (the client -> redis-server direction): when the client's side ends, the
	// bytes it sent are delivered, redis-server's side is half-closed, and the whole link is
	// closed if redis-server has not finished within halfCloseGrace. A half-closing client
	// still reads its replies; a client that closed its socket (go-redis replacing a
	// timed-out connection; neither it nor redis-server ever half-closes) looks the same
	// from here, and without the bound its link, its goroutines and buffers would stay
	// until a paused node resumes: hundreds of links a second during a pause.
	graceOnEOF bool
	// readBuf is what the reader blocks on. A read that fills it (bulk data: a full sync, a
	// big reply) is followed by reads into whole pooled chunks until one comes back short.
	readBuf [proxyReadBuf]byte
}

func newPipe(l *link, src, dst *net.TCPConn) (*pipe, error) {
	w, err := newWaiter()
	if err != nil {
		return nil, err
	}
	return &pipe{l: l, src: src, dst: dst, w: w}, nil
}

// read runs until src ends (then it finishes the direction, or queues the eof marker for the
// writer) or the link is aborted.
func (p *pipe) read() {
	bulk := false
	for {
		var bp *[]byte
		buf := p.readBuf[:]
		if bulk {
			bp = chunkPool.Get().(*[]byte)
			buf = *bp
		}
		n, err := p.src.Read(buf)
		bulk = n == len(buf)
		if n > 0 {
			arrived := time.Now()
			d := p.l.p.sampleDelay()
			if d == 0 && p.pending.Load() == 0 {
				_, werr := p.dst.Write(buf[:n])
				if bp != nil {
					chunkPool.Put(bp)
				}
				if werr != nil {
					p.l.abort()
					return
				}
			} else {
				if bp == nil { // the chunk outlives readBuf's next read
					bp = chunkPool.Get().(*[]byte)
					copy(*bp, buf[:n])
				}
				p.startWriter()
				p.pending.Add(1)
				if !p.send(chunk{buf: bp, n: n, release: arrived.Add(d)}) {
					return
				}
			}
		} else if bp != nil {
			chunkPool.Put(bp)
		}
		if err != nil {
			// EOF, or src reset: deliver what is queued, then half-close dst.
			if p.q == nil {
				p.finish()
				return
			}
			p.pending.Add(1)
			p.send(chunk{eof: true})
			return
		}
	}
}

// startWriter starts the direction's writer and its queue the first time a chunk is delayed.
// Only the reader calls it; the proxy's WaitGroup counts the reader, so the Add cannot race
// the Wait in close.
func (p *pipe) startWriter() {
	if p.q != nil {
		return
	}
	p.q = make(chan chunk, proxyQueue)
	p.l.p.wg.Add(1)
	go func() {
		defer p.l.p.wg.Done()
		p.write()
	}()
}

// finish ends the direction once everything read has been written: half-close dst and, on the
// client's side, bound how long redis-server may take to finish.
func (p *pipe) finish() {
	_ = p.dst.CloseWrite()
	if p.graceOnEOF {
		time.AfterFunc(halfCloseGrace, p.l.abort) // a no-op when the link ended first
	}
	p.l.directionDone()
}

// send queues c; false when the link was aborted meanwhile.
func (p *pipe) send(c chunk) bool {
	select {
	case p.q <- c:
		return true
	case <-p.l.done:
		return false
	}
}

// write delivers queued chunks at their release times until the eof marker or an abort.
func (p *pipe) write() {
	for {
		var c chunk
		select {
		case c = <-p.q:
		case <-p.l.done:
			return
		}
		if c.eof {
			p.pending.Add(-1)
			p.finish()
			return
		}
		if wait := time.Until(c.release); wait > 0 {
			if err := p.w.sleep(wait); err != nil {
				p.l.abort()
				return
			}
		}
		_, err := p.dst.Write((*c.buf)[:c.n])
		chunkPool.Put(c.buf)
		p.pending.Add(-1)
		if err != nil {
			p.l.abort()
			return
		}
	}
}
