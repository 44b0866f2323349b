// Command benchtable reads `go test -bench` output on stdin and prints the
// figures of docs/PERFORMANCE.md as one table: figure, ahpd, the baseline
// measured in the same run, their ratio, and the goal. A benchmark takes
// part when it reports a "ratio" metric, an ahpd metric (named ahpd-… or
// loaded-…) and a baseline (raw-… or empty-…); other lines pass through to
// stderr so nothing is lost.
//
//	go test -run '^$' -bench . ./internal/... | go run ./internal/perf/benchtable
package main

import (
	"bufio"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
)

// goals are the goals, by benchmark name (without -GOMAXPROCS).
var goals = map[string]string{
	"BenchmarkFanout/N=1":                      "-",
	"BenchmarkFanout/N=10":                     "-",
	"BenchmarkFanout/N=100":                    "ratio ≥ 0.5",
	"BenchmarkFanoutCPU":                       "CPU ratio ≤ 2; spread p99 ≤ raw paced",
	"BenchmarkIdleSessionMemory":               "loaded ≤ 20 KiB, unloaded ≤ 4 KiB",
	"BenchmarkWholeTurn":                       "ratio ≤ 15",
	"BenchmarkColdStart":                       "< 100 ms",
	"BenchmarkListSessionsPage/sessions=1000":  "≤ 5 ms/page",
	"BenchmarkListSessionsPage/sessions=10000": "≤ 5 ms/page",
	"BenchmarkPersist200Parts":                 "ratio ≤ 1.2",
	"BenchmarkNotify":                          "-",
	"BenchmarkSearch10kTurns":                  "< 50 ms/search",
}

var procs = regexp.MustCompile(`-\d+$`)

type metric struct {
	value float64
	unit  string
}

func main() {
	type row struct{ figure, ahpd, base, ratio, goal string }
	var rows []row
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		f := strings.Fields(line)
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			fmt.Fprintln(os.Stderr, line)
			continue
		}
		name := procs.ReplaceAllString(f[0], "")
		var ms []metric
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				break
			}
			ms = append(ms, metric{v, f[i+1]})
		}
		var ahpd, base []string
		ratio := ""
		for _, m := range ms {
			switch {
			case m.unit == "ratio":
				ratio = strconv.FormatFloat(m.value, 'g', 3, 64)
			case strings.HasPrefix(m.unit, "ahpd-"), strings.HasPrefix(m.unit, "loaded-"), strings.HasPrefix(m.unit, "unloaded-"), strings.HasPrefix(m.unit, "snapshot-"):
				ahpd = append(ahpd, format(m))
			case strings.HasPrefix(m.unit, "raw-"), strings.HasPrefix(m.unit, "empty-"):
				base = append(base, format(m))
			}
		}
		if ratio == "" {
			fmt.Fprintln(os.Stderr, line)
			continue
		}
		goal := goals[name]
		if goal == "" {
			goal = "-"
		}
		rows = append(rows, row{strings.TrimPrefix(name, "Benchmark"), strings.Join(ahpd, ", "), strings.Join(base, ", "), ratio, goal})
	}
	fmt.Println("| figure | ahpd | baseline (same run) | ratio | goal |")
	fmt.Println("|---|---|---|---|---|")
	for _, r := range rows {
		fmt.Printf("| %s | %s | %s | %s | %s |\n", r.figure, r.ahpd, r.base, r.ratio, r.goal)
	}
	if len(rows) == 0 {
		fmt.Fprintln(os.Stderr, "benchtable: no benchmark reported a ratio")
		os.Exit(1)
	}
}

func format(m metric) string {
	return strconv.FormatFloat(m.value, 'f', -1, 64) + " " + m.unit
}
