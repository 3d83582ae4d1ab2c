package live

import (
	"errors"
	"strings"
	"testing"
	"time"

	"ratelab/results"
)

func TestCheckListen(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		addr   string
		remote bool
		want   error
	}{
		{"127.0.0.1:9464", false, nil},
		{"[::1]:9464", false, nil},
		{"localhost:9464", false, nil},
		{":9464", false, ErrNotLoopback},
		{"0.0.0.0:9464", false, ErrNotLoopback},
		{"10.1.2.3:9464", false, ErrNotLoopback},
		{"0.0.0.0:9464", true, nil},
	} {
		if have := CheckListen(c.addr, c.remote); !errors.Is(have, c.want) || (c.want == nil) != (have == nil) {
			t.Errorf("CheckListen(%q, %v) = %v, want %v", c.addr, c.remote, have, c.want)
		}
	}
	if CheckListen("9464", false) == nil {
		t.Error("CheckListen without a port separator: want an error")
	}
}

func TestConfigValidateSaysEveryProblem(t *testing.T) {
	t.Parallel()
	err := Config{Listen: ":9464", Push: "ftp://x/write", Grace: -time.Second}.Validate()
	for _, want := range []string{"metrics listen", "not loopback", "metrics push", "must not be negative"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %v, want it to say %q", err, want)
		}
	}
	if err := (Config{Listen: "127.0.0.1:0", Push: "http://127.0.0.1:9090/api/v1/write"}).Validate(); err != nil {
		t.Errorf("Validate() of a loopback listen and an http push = %v", err)
	}
}

// TestDisabledConfigWiresAsNil: without flags Start returns a nil *Run, whose hooks pass
// through and whose Finish and Close do nothing.
func TestDisabledConfigWiresAsNil(t *testing.T) {
	t.Parallel()
	r, err := Config{}.Start("s", "r")
	if r != nil || err != nil {
		t.Fatalf("Config{}.Start = %v, %v; want nil, nil", r, err)
	}
	var rows int
	r.TeeInterval(func(results.Interval) { rows++ })(results.Interval{})
	if rows != 1 {
		t.Error("a nil Run's TeeInterval does not call the next hook")
	}
	if r.TeeProgress(nil) != nil || r.Addr() != "" || r.Finish(t.Context(), nil) != nil || r.Close() != nil {
		t.Error("a nil Run must pass hooks through and finish as a no-op")
	}
	if _, err := (Config{Listen: "0.0.0.0:0"}).Start("s", "r"); !errors.Is(err, ErrNotLoopback) {
		t.Errorf("Start with a non-loopback listen = %v, want ErrNotLoopback", err)
	}
	if have := RunID("smoke", "out/smoke-20261207-101500"); have != "smoke-20261207-101500" {
		t.Errorf("RunID = %q", have)
	}
}
