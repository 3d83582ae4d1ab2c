package results

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// hdrJar is HdrHistogram's Java library as Debian's libhdrhistogram-java installs it;
// RATELAB_HDRHISTOGRAM_JAR names another.
const hdrJar = "/usr/share/java/hdrhistogram.jar"

// TestLatencyLogReadByHistogramLogProcessor feeds latency.hlog to HdrHistogram's own Java
// HistogramLogProcessor, the tool the format is for: it must see one interval per second, its
// interval end times 1, 2, ... s after StartTime, with each second's count, p50 and max in ms
// (with -outputValueUnitRatio 1000, as docs/metrics.md tells), and an overall distribution with
// the run's total count. Skipped without java and the jar.
func TestLatencyLogReadByHistogramLogProcessor(t *testing.T) {
	t.Parallel()
	jar := hdrJar
	if j := os.Getenv("RATELAB_HDRHISTOGRAM_JAR"); j != "" {
		jar = j
	}
	_, errJava := exec.LookPath("java")
	if _, err := os.Stat(jar); err != nil || errJava != nil {
		why := fmt.Sprintf("needs java and %s (apt-get install default-jre-headless libhdrhistogram-java)", jar)
		if os.Getenv("RATELAB_REQUIRE_HDRHISTOGRAM_JAVA") == "1" {
			t.Fatalf("%s; RATELAB_REQUIRE_HDRHISTOGRAM_JAVA=1 requires it", why)
		}
		t.Skipf("%s; set RATELAB_REQUIRE_HDRHISTOGRAM_JAVA=1 to make this a failure", why)
	}
	hs, rows := seededSeconds(8, 6)
	dir := writeSeries(t, logStart, hs, rows, RequestCounts{})
	out := filepath.Join(dir, "hlp")
	cmd := exec.Command("java", "-cp", jar, "org.HdrHistogram.HistogramLogProcessor",
		"-i", filepath.Join(dir, LatencyLogFile), "-o", out, "-outputValueUnitRatio", "1000")
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("HistogramLogProcessor: %v\n%s", err, msg)
	}
	text := string(readFile(t, dir, "hlp"))
	// Lines "1.000: I:640 (   0.123   0.169   1.305 ) T:640 ( ... )": end time, count, p50 p90 max.
	var total int64
	n := 0
	for _, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		if len(f) < 7 || !strings.HasPrefix(f[1], "I:") {
			continue
		}
		i := n
		n++
		if i >= len(hs) {
			t.Fatalf("more intervals than the %d seconds written:\n%s", len(hs), text)
		}
		end, err1 := strconv.ParseFloat(strings.TrimSuffix(f[0], ":"), 64)
		count, err2 := strconv.ParseInt(strings.TrimPrefix(f[1], "I:"), 10, 64)
		p50, err3 := strconv.ParseFloat(f[3], 64)
		maxMs, err4 := strconv.ParseFloat(f[5], 64)
		if err1 != nil || err2 != nil || err3 != nil || err4 != nil {
			t.Fatalf("line %q does not parse", line)
		}
		h := hs[i]
		if end != float64(i+1) || count != h.Count() || p50 != h.QuantileMs(50) || maxMs != h.MaxMs() {
			t.Errorf("interval %d: ends %v s after StartTime, count %d, p50 %v ms, max %v ms; want %d, %d, %v, %v",
				i, end, count, p50, maxMs, i+1, h.Count(), h.QuantileMs(50), h.MaxMs())
		}
		total += count
	}
	if n != len(hs) {
		t.Fatalf("HistogramLogProcessor read %d intervals, want %d:\n%s", n, len(hs), text)
	}
	hgrm := string(readFile(t, dir, "hlp.hgrm"))
	if want := fmt.Sprintf("Total count    = %12d]", total); !strings.Contains(hgrm, want) {
		t.Errorf("overall distribution lacks %q:\n%s", want, hgrm)
	}
}
