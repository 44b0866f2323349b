// Command benchtable reads `go test -bench` output on stdin and prints the
// figures of docs/PERFORMANCE.md as one table: figure, ahpd, the baseline
// measured in the same run, their ratio, and the goal. A benchmark takes
// part when it reports a "ratio" metric, an ahpd metric (named ahpd-… or
// loaded-…) and a baseline (raw-…, bare-…, empty-…, or first-… for the same daemon measured
// earlier in the run); other lines pass
// through to stderr so nothing is lost.
//
// A benchmark with several goals reports a ratio for each beyond the
// first as KEY-ratio (p50-ratio) with its figures as ahpd-KEY-… and
// raw-KEY-… (ahpd-p50-µs, raw-p50-µs): each such ratio is a row of its own,
// "Benchmark KEY", with its own goal.
//
//	go test -run '^$' -bench . ./internal/... | go run ./internal/perf/benchtable
package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// goals are the issues' goals, by benchmark name (without -GOMAXPROCS),
// and a keyed ratio's by the name, a space and its key.
var goals = map[string]string{
	"BenchmarkFanout/N=1":                      "-",
	"BenchmarkFanout/N=10":                     "-",
	"BenchmarkFanout/N=100":                    "-",
	"BenchmarkFanoutVsRaw/N=1":                 "-",
	"BenchmarkFanoutVsRaw/N=10":                "ratio ≥ 0.3",
	"BenchmarkFanoutVsRaw/N=100":               "ratio ≥ 0.6",
	"BenchmarkFanoutCPU":                       "CPU ratio ≤ 2; spread p99 ≤ raw paced",
	"BenchmarkIdleSessionMemory":               "loaded ≤ 20 KiB, unloaded ≤ 4 KiB",
	"BenchmarkTurnVsDurableRaw":                "turns/s ratio ≥ 0.6",
	"BenchmarkTurnVsDurableRaw p50":            "ratio ≤ 1.7",
	"BenchmarkTurnVsDurableRaw p99":            "-",
	"BenchmarkTurnVsDurableRaw cpu":            "reported",
	"BenchmarkLoadVsDurableRaw":                "turns/s ratio ≥ 0.6",
	"BenchmarkLoadVsDurableRaw p99":            "ratio ≤ 2",
	"BenchmarkLoadVsDurableRaw rss":            "ratio ≤ 2",
	"BenchmarkLoadVsDurableRaw cpu":            "reported",
	"BenchmarkColdStart":                       "ratio ≤ 1.5",
	"BenchmarkListSessionsPage/sessions=2000":  "≤ 5 ms/page",
	"BenchmarkListSessionsPage/sessions=10000": "≤ 5 ms/page",
	"BenchmarkPersist200Parts":                 "ratio ≤ 1.2",
	"BenchmarkNotify":                          "-",
	"BenchmarkChatMemory":                      "ratio ≤ 1.5, every turn read back whole",
	"BenchmarkSearch10kTurns":                  "< 50 ms/search",
}

// ahpdPrefixes and basePrefixes name whose a metric is: ahpd's figure or
// the baseline's.
var (
	ahpdPrefixes = []string{"ahpd-", "loaded-", "unloaded-", "snapshot-"}
	basePrefixes = []string{"raw-", "bare-", "empty-", "first-"}
)

var procs = regexp.MustCompile(`-\d+$`)

type metric struct {
	value float64
	unit  string
}

// row is one line of the table.
type row struct{ figure, ahpd, base, ratio, goal string }

func main() {
	rows := parse(os.Stdin, os.Stderr)
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

// parse reads benchmark output and returns the table's rows; every line
// that makes no row goes to rest.
func parse(in io.Reader, rest io.Writer) []row {
	var rows []row
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		f := strings.Fields(line)
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			fmt.Fprintln(rest, line)
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
		// The ratios, in the order reported (the plain "ratio" first):
		// each makes a row, keyed "" for "ratio" and KEY for KEY-ratio.
		var keys []string
		ratios := map[string]string{}
		for _, m := range ms {
			key, ok := strings.CutSuffix(m.unit, "ratio")
			if !ok || key != "" && !strings.HasSuffix(key, "-") {
				continue
			}
			key = strings.TrimSuffix(key, "-")
			ratios[key] = strconv.FormatFloat(m.value, 'g', 3, 64)
			if key == "" {
				keys = append([]string{""}, keys...)
			} else {
				keys = append(keys, key)
			}
		}
		if len(keys) == 0 {
			fmt.Fprintln(rest, line)
			continue
		}
		// Each ahpd or baseline metric belongs to the row whose key its
		// name starts with after its prefix, else to the plain row.
		ahpd, base := map[string][]string{}, map[string][]string{}
		// go test prints metrics sorted by unit; the baselines go in
		// basePrefixes' order (raw, then bare).
		slices.SortStableFunc(ms, func(a, b metric) int { return baseRank(a.unit) - baseRank(b.unit) })
		for _, m := range ms {
			into, measure := ahpd, ""
			if p, ok := prefixOf(m.unit, ahpdPrefixes); ok {
				measure = strings.TrimPrefix(m.unit, p)
			} else if p, ok := prefixOf(m.unit, basePrefixes); ok {
				into, measure = base, strings.TrimPrefix(m.unit, p)
			} else {
				continue
			}
			key := ""
			for _, k := range keys {
				if k != "" && strings.HasPrefix(measure, k+"-") {
					key = k
				}
			}
			into[key] = append(into[key], format(m))
		}
		for _, key := range keys {
			goalName, figure := name, strings.TrimPrefix(name, "Benchmark")
			if key != "" {
				goalName, figure = name+" "+key, figure+" "+key
			}
			goal := goals[goalName]
			if goal == "" {
				goal = "-"
			}
			rows = append(rows, row{figure, strings.Join(ahpd[key], ", "), strings.Join(base[key], ", "), ratios[key], goal})
		}
	}
	return rows
}

// baseRank is the place of unit's prefix in basePrefixes (-1 for others).
func baseRank(unit string) int {
	for i, p := range basePrefixes {
		if strings.HasPrefix(unit, p) {
			return i
		}
	}
	return -1
}

// prefixOf is the one of prefixes unit starts with.
func prefixOf(unit string, prefixes []string) (string, bool) {
	for _, p := range prefixes {
		if strings.HasPrefix(unit, p) {
			return p, true
		}
	}
	return "", false
}

func format(m metric) string {
	return strconv.FormatFloat(m.value, 'f', -1, 64) + " " + m.unit
}
