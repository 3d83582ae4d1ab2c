package clustertest

import (
	"fmt"
	"math"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The fault tier's tests judge recovery times and tail latency, which a starved machine ruins
// as surely as a bug. When such a test fails, its output says in one line which it was: the
// machine was starved when a run's own schedule lag p99 exceeded StarvedLagMs, or the 1-minute
// load average exceeded StarvedLoadPerCore times the cores, while the test ran; otherwise the
// product misbehaved.
const (
	StarvedLagMs       = 10.0
	StarvedLoadPerCore = 2.0
)

// loadSampleEvery is how often Watch reads the load average; the 1-minute average moves little
// in a few seconds.
const loadSampleEvery = 2 * time.Second

// machine is what Watch saw of one test: the worst schedule lag p99 of its runs and the highest
// 1-minute load average.
type machine struct {
	mu    sync.Mutex
	lagMs float64 // worst run's schedule lag p99; NaN before a run is recorded
	runs  int
	load  float64 // highest 1-minute load average read; NaN where it cannot be read
}

var watched sync.Map // testing.TB -> *machine

// Watch samples the machine's load while t runs and, when t has failed by its end, logs the
// verdict line (starved or misbehaved). Calling it again for the same t does nothing more.
func Watch(t testing.TB) {
	watch(t)
}

// RecordLag adds a finished run's schedule lag p99 (ms) to t's verdict, watching t if Watch
// was not called.
func RecordLag(t testing.TB, lagP99Ms float64) {
	m := watch(t)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.runs == 0 || lagP99Ms > m.lagMs {
		m.lagMs = lagP99Ms
	}
	m.runs++
}

func watch(t testing.TB) *machine {
	fresh := &machine{lagMs: math.NaN(), load: math.NaN()}
	v, loaded := watched.LoadOrStore(t, fresh)
	m := v.(*machine)
	if loaded {
		return m
	}
	m.sample()
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(loadSampleEvery)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				m.sample()
			}
		}
	}()
	t.Cleanup(func() {
		close(stop)
		<-done
		m.sample()
		watched.Delete(t)
		if t.Failed() {
			m.mu.Lock()
			defer m.mu.Unlock()
			t.Log(verdict(m.lagMs, m.runs, m.load, runtime.NumCPU()))
		}
	})
	return m
}

func (m *machine) sample() {
	l, err := loadAverage()
	if err != nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if math.IsNaN(m.load) || l > m.load {
		m.load = l
	}
}

// loadAverage reads the 1-minute load average from /proc/loadavg (Linux).
func loadAverage() (float64, error) {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0, err
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0, fmt.Errorf("/proc/loadavg: empty")
	}
	return strconv.ParseFloat(f[0], 64)
}

// verdict is the one line a failed fault-tier test ends with: lagMs is the worst schedule lag
// p99 of runs runs (NaN with none), load the highest 1-minute load average (NaN unknown).
func verdict(lagMs float64, runs int, load float64, cores int) string {
	loadLimit := StarvedLoadPerCore * float64(cores)
	lag := "no run finished, so no schedule lag"
	if runs > 0 {
		lag = fmt.Sprintf("schedule lag p99 %.2f ms in the worst of %d run(s) (starved above %.0f ms)", lagMs, runs, StarvedLagMs)
	}
	ld := "load average unknown"
	if !math.IsNaN(load) {
		ld = fmt.Sprintf("1-minute load average up to %.2f (starved above %.0f = %.0f x %d cores)", load, loadLimit, StarvedLoadPerCore, cores)
	}
	starved := (runs > 0 && lagMs > StarvedLagMs) || (!math.IsNaN(load) && load > loadLimit)
	if starved {
		return "VERDICT: the machine was starved: " + lag + "; " + ld
	}
	return "VERDICT: the product misbehaved (the machine kept up): " + lag + "; " + ld
}
