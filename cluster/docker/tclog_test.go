package docker

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestTCLogger(t *testing.T) {
	t.Parallel()
	var got []string
	logf := func(f string, a ...any) { got = append(got, fmt.Sprintf(f, a...)) }
	quiet := newTCLogger(logf, false)
	loud := newTCLogger(logf, true)
	for i := range 5 {
		quiet.Printf("line %d\n", i)
	}
	loud.Printf("🐳 Creating container for image %s", "redis:7")
	quiet.Printf("container logs (%s):\n%s", "exit", strings.Repeat("x", 3*tcLineMax))
	if want := []string{"testcontainers: 🐳 Creating container for image redis:7"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("Logf got %q, want %q: only the Debug logger forwards", got, want)
	}
	base := errors.New("boom")
	err := quiet.explain(base)
	if !errors.Is(err, base) {
		t.Errorf("explain(%v) = %v, does not wrap it", base, err)
	}
	msg := err.Error()
	for _, want := range []string{"boom (testcontainers said: line 3 | line 4 | container logs (exit):", "x..."} {
		if !strings.Contains(msg, want) {
			t.Errorf("explain = %q, want it to contain %q", msg, want)
		}
	}
	if strings.Contains(msg, "line 2") || len(msg) > 3*tcLineMax {
		t.Errorf("explain keeps more than the last %d lines of at most %d bytes: %d bytes", tcKeep, tcLineMax, len(msg))
	}
	if err := newTCLogger(nil, true).explain(base); err != base {
		t.Errorf("explain with nothing logged = %v, want the error itself", err)
	}
}

func TestDefaultSink(t *testing.T) {
	t.Parallel()
	d := &defaultSink{sinks: map[int]func(string, ...any){}}
	var a, b []string
	removeA := d.add(func(f string, v ...any) { a = append(a, fmt.Sprintf(f, v...)) }, true)
	removeB := d.add(func(f string, v ...any) { b = append(b, fmt.Sprintf(f, v...)) }, false)
	d.Printf("banner %d\n", 1)
	removeA()
	removeB()
	d.Printf("banner %d", 2)
	if fmt.Sprint(a) != "[testcontainers: banner 1]" || len(b) != 0 {
		t.Errorf("sinks got %q and %q; want the Debug one to get the line sent while it was added, the other nothing", a, b)
	}
}
