package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestEachRatioIsARow: a benchmark's plain ratio makes its row with the
// figures no other ratio claims; each KEY-ratio makes a row of its own
// with the ahpd-KEY-… and raw-KEY-… or bare-KEY-… figures and the goal
// named "Benchmark KEY"; a line without a ratio passes through.
func TestEachRatioIsARow(t *testing.T) {
	in := strings.Join([]string{
		"goos: linux",
		"BenchmarkLoadVsDurableRaw-2   	       1	24321353005 ns/op	       681.8 ahpd-cpu-µs/turn	       226.3 ahpd-p99-ms	       117.8 ahpd-rss-MiB	       791.4 ahpd-turns/s	       171.5 bare-cpu-µs/turn	        88.17 bare-p99-ms	        19.31 bare-rss-MiB	      3018 bare-turns/s	         1.890 cpu-ratio	         1.668 p99-ratio	         0.5382 ratio	       360.7 raw-cpu-µs/turn	       135.6 raw-p99-ms	        27.47 raw-rss-MiB	      1470 raw-turns/s	         4.290 rss-ratio",
		"BenchmarkColdStart-2 1 5 ns/op 14 ahpd-ms 5 empty-ms 2.8 ratio 20 ahpd-first-ms 7 empty-first-ms",
		"BenchmarkPutTurn-2 1000 5 ns/op",
	}, "\n")
	var rest bytes.Buffer
	got := parse(strings.NewReader(in), &rest)
	want := []row{
		{"LoadVsDurableRaw", "791.4 ahpd-turns/s", "1470 raw-turns/s, 3018 bare-turns/s", "0.538", "turns/s ratio ≥ 0.6"},
		{"LoadVsDurableRaw cpu", "681.8 ahpd-cpu-µs/turn", "360.7 raw-cpu-µs/turn, 171.5 bare-cpu-µs/turn", "1.89", "reported"},
		{"LoadVsDurableRaw p99", "226.3 ahpd-p99-ms", "135.6 raw-p99-ms, 88.17 bare-p99-ms", "1.67", "ratio ≤ 2"},
		{"LoadVsDurableRaw rss", "117.8 ahpd-rss-MiB", "27.47 raw-rss-MiB, 19.31 bare-rss-MiB", "4.29", "ratio ≤ 2"},
		{"ColdStart", "14 ahpd-ms, 20 ahpd-first-ms", "5 empty-ms, 7 empty-first-ms", "2.8", "ratio ≤ 1.5"},
	}
	if len(got) != len(want) {
		t.Fatalf("rows %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("row %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	if r := rest.String(); !strings.Contains(r, "goos: linux") || !strings.Contains(r, "BenchmarkPutTurn") {
		t.Errorf("the lines without a ratio went elsewhere: %q", r)
	}
}
