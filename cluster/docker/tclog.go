package docker

import (
	"fmt"
	"strings"
	"sync"

	tclog "github.com/testcontainers/testcontainers-go/log"
)

// testcontainers logs as it works: per container through the request's Logger (registry auth
// lookups, "Creating container", "Container started", a failed container's output), and the rest
// (the Docker engine banner, image substitutions, mounts) through its process-wide default
// logger, which writes to stderr. None of it is progress the user asked for, so it is debug
// output: it goes to Options.Cluster.Logf only with Options.Debug, prefixed "testcontainers: ",
// and is dropped otherwise. An error testcontainers returns is still returned, with the last
// lines it logged for that container (tcLogger.explain).

const (
	// tcPrefix starts every testcontainers line sent to Logf.
	tcPrefix = "testcontainers: "
	// tcKeep is how many of a container's last lines are kept for its errors.
	tcKeep = 3
	// tcLineMax bounds a kept line (a failed container's whole output is one line).
	tcLineMax = 2048
)

// tcLogger receives testcontainers' lines about one container: it forwards them to debugf (nil:
// drops them) and keeps the last tcKeep for explain. Safe for concurrent use.
type tcLogger struct {
	debugf func(format string, args ...any)

	mu   sync.Mutex
	last []string
}

var _ tclog.Logger = (*tcLogger)(nil)

// newTCLogger returns a container's logger: lines go to logf when debug is set.
func newTCLogger(logf func(string, ...any), debug bool) *tcLogger {
	l := &tcLogger{}
	if debug && logf != nil {
		l.debugf = logf
	}
	return l
}

// Printf implements testcontainers' log.Logger.
func (l *tcLogger) Printf(format string, args ...any) {
	line := strings.TrimSpace(fmt.Sprintf(format, args...))
	if l.debugf != nil {
		l.debugf("%s%s", tcPrefix, line)
	}
	if len(line) > tcLineMax {
		line = line[:tcLineMax] + "..."
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.last = append(l.last, line)
	if len(l.last) > tcKeep {
		l.last = l.last[len(l.last)-tcKeep:]
	}
}

// explain wraps err with the last lines testcontainers logged for the container, which Debug
// off has kept from the user: "...: %w (testcontainers said: a | b)".
func (l *tcLogger) explain(err error) error {
	l.mu.Lock()
	last := strings.Join(l.last, " | ")
	l.mu.Unlock()
	if last == "" {
		return err
	}
	return fmt.Errorf("%w (testcontainers said: %s)", err, last)
}

// defaultSink is testcontainers' process-wide default logger once a Start has run: it sends a
// line to the Logf of every Start with Debug in progress, and drops it when there is none.
type defaultSink struct {
	mu    sync.Mutex
	next  int
	sinks map[int]func(string, ...any)
}

var tcDefault = &defaultSink{sinks: map[int]func(string, ...any){}}

// installDefault makes tcDefault testcontainers' default logger, once per process, before this
// package's first testcontainers call (SetDefault is an unguarded write: it must not race
// testcontainers' reads).
var installDefault = sync.OnceFunc(func() { tclog.SetDefault(tcDefault) })

// Printf implements testcontainers' log.Logger.
func (d *defaultSink) Printf(format string, args ...any) {
	d.mu.Lock()
	sinks := make([]func(string, ...any), 0, len(d.sinks))
	for _, f := range d.sinks {
		sinks = append(sinks, f)
	}
	d.mu.Unlock()
	if len(sinks) == 0 {
		return
	}
	line := strings.TrimSpace(fmt.Sprintf(format, args...))
	for _, f := range sinks {
		f("%s%s", tcPrefix, line)
	}
}

// add sends default-logger lines to logf until the returned func is called; with debug off or
// no logf it does nothing.
func (d *defaultSink) add(logf func(string, ...any), debug bool) (remove func()) {
	if !debug || logf == nil {
		return func() {}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	id := d.next
	d.next++
	d.sinks[id] = logf
	return func() {
		d.mu.Lock()
		defer d.mu.Unlock()
		delete(d.sinks, id)
	}
}
