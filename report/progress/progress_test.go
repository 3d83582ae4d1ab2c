package progress

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"ratelab/results"
)

func TestLine(t *testing.T) {
	t.Parallel()
	row := results.Interval{TS: 4, Offered: 2000, Allowed: 1500, Denied: 400, FailedOpen: 50, Errors: 10, P99Ms: 1.234}
	tests := []struct {
		name string
		have Status
		want string
	}{
		{"before the first row", Status{Elapsed: 300 * time.Millisecond, Total: 10 * time.Second},
			"0.3s/10.0s  starting  errors 0  overspend 0"},
		{"a row", Status{Elapsed: 5 * time.Second, Total: 10 * time.Second, Last: row, Rows: 5, Errors: 12, Overspend: 3},
			"5.0s/10.0s  offered 2000/s achieved 1950/s  p99 1.23 ms  errors 12  overspend 3"},
		{"fail policy, drops and a fault", Status{Elapsed: 5 * time.Second, Total: 10 * time.Second, Last: row, Rows: 5,
			FailedOpen: 7, FailedClosed: 2, Dropped: 40, Fault: "kill-primary"},
			"5.0s/10.0s  offered 2000/s achieved 1950/s  p99 1.23 ms  errors 0  overspend 0  failed-open 7  failed-closed 2  dropped 40  fault kill-primary"},
		{"a second with drops", Status{Elapsed: 5 * time.Second, Total: 10 * time.Second, Rows: 5,
			Last: results.Interval{Offered: 3000, Dropped: 1000, Allowed: 2000, P99Ms: 0.5}},
			"5.0s/10.0s  offered 3000/s achieved 2000/s  p99 0.50 ms (answered; 33.3% dropped)  errors 0  overspend 0"},
		{"long run, slow second", Status{Elapsed: 75 * time.Minute, Total: 2 * time.Hour, Last: results.Interval{Offered: 3000, Allowed: 3000, P99Ms: 123.4}, Rows: 4500},
			"1:15:00/2:00:00  offered 3000/s achieved 3000/s  p99 123 ms  errors 0  overspend 0"},
		{"minutes", Status{Elapsed: 95 * time.Second, Total: 30 * time.Minute, Last: results.Interval{P99Ms: 12.34}, Rows: 95},
			"1:35/30:00  offered 0/s achieved 0/s  p99 12.3 ms  errors 0  overspend 0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if have := Line(tc.have); have != tc.want {
				t.Errorf("Line:\nhave %q\nwant %q", have, tc.want)
			}
		})
	}
}

func TestPlainEvery(t *testing.T) {
	t.Parallel()
	tests := []struct {
		have time.Duration
		want int
	}{
		{0, 1}, {5 * time.Second, 1}, {2 * time.Minute, 1}, {121 * time.Second, 2},
		{10 * time.Minute, 5}, {30 * time.Minute, 15}, {time.Hour, 30}, {24 * time.Hour, 60},
	}
	for _, tc := range tests {
		if have := PlainEvery(tc.have); have != tc.want {
			t.Errorf("PlainEvery(%v) = %d, want %d", tc.have, have, tc.want)
		}
		if n := int(tc.have/time.Second) / tc.want; n > MaxPlainLines+1 && tc.want < 60 {
			t.Errorf("PlainEvery(%v) = %d: %d lines, want at most %d", tc.have, tc.want, n, MaxPlainLines)
		}
	}
}

// rows feeds n one-second rows of 1000 offered, 990 allowed, one overspend each.
func rows(d *Display, n int) {
	for i := range n {
		d.Progress(results.Progress{Elapsed: time.Duration(i)*time.Second + 500*time.Millisecond, Offered: int64(i) * 1000})
		d.Interval(results.Interval{TS: float64(i), Offered: 1000, Sent: 1000, Allowed: 990, Denied: 10, Overspend: 1, P99Ms: 2})
	}
}

func TestPlainLinesEverySecond(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	d := New(&buf, 3*time.Second)
	if d.Terminal() {
		t.Fatal("a bytes.Buffer is not a terminal")
	}
	rows(d, 3)
	d.Close()
	want := "" +
		"  1.0s/3.0s  offered 1000/s achieved 1000/s  p99 2.00 ms  errors 0  overspend 1\n" +
		"  2.0s/3.0s  offered 1000/s achieved 1000/s  p99 2.00 ms  errors 0  overspend 2\n" +
		"  3.0s/3.0s  offered 1000/s achieved 1000/s  p99 2.00 ms  errors 0  overspend 3\n"
	if buf.String() != want {
		t.Errorf("plain lines:\nhave %q\nwant %q", buf.String(), want)
	}
}

func TestPlainLinesLongRun(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	// Just under 10 min: a line every 5 s, and the last second's even when off the beat.
	d := New(&buf, 10*time.Minute-2*time.Second, WithPrefix("rep 1/3"))
	rows(d, 598)
	d.Close()
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != 120 {
		t.Fatalf("%d lines, want 119 (every 5 s) + the last: %q ...", len(lines), lines[:3])
	}
	if !strings.HasPrefix(lines[0], "  rep 1/3  5.0s/9:58  ") {
		t.Errorf("first line %q, want the prefix and 5 s", lines[0])
	}
	if !strings.HasPrefix(lines[119], "  rep 1/3  9:58/9:58  ") || !strings.Contains(lines[119], "overspend 598") {
		t.Errorf("last line %q, want 9:58 and overspend 598", lines[119])
	}
}

func TestBarRedrawsBetweenRows(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	d := New(&buf, 4*time.Second, WithTerminal(true))
	if !d.Terminal() {
		t.Fatal("WithTerminal(true) draws a bar")
	}
	d.Progress(results.Progress{Elapsed: 250 * time.Millisecond, Total: 4 * time.Second})
	if !strings.Contains(buf.String(), "0.2s/4.0s  starting") {
		t.Fatalf("bar after the first snapshot %q: want its status", buf.String())
	}
	time.Sleep(RedrawEvery + 50*time.Millisecond) // the bar throttles its redraws
	d.Interval(results.Interval{TS: 0, Offered: 500, Allowed: 500, P99Ms: 0.5})
	d.Progress(results.Progress{Elapsed: 1200 * time.Millisecond, Fault: "pause"})
	d.Println("ratelab: fault at 1.2s: pause")
	time.Sleep(RedrawEvery + 50*time.Millisecond)
	d.Progress(results.Progress{Elapsed: 1500 * time.Millisecond, Fault: "pause"})
	d.Close()
	d.Interval(results.Interval{TS: 1}) // after Close: ignored
	out := buf.String()
	for _, want := range []string{
		"|  1.0s/4.0s  offered 500/s achieved 500/s  p99 0.50 ms  errors 0  overspend 0",
		"\rratelab: fault at 1.2s: pause\n",
		"1.5s/4.0s  offered 500/s achieved 500/s  p99 0.50 ms  errors 0  overspend 0  fault pause",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("terminal output lacks %q:\n%q", want, out)
		}
	}
	if !strings.HasSuffix(out, "\r  1.5s/4.0s  offered 500/s achieved 500/s  p99 0.50 ms  errors 0  overspend 0  fault pause\n") {
		t.Errorf("terminal output ends %q, want the bar cleared and the final status as a line", out[max(0, len(out)-120):])
	}
	if strings.Contains(out, "100%") {
		t.Errorf("a run closed at 1.5 of 4 s showed a full bar: %q", out)
	}
}
