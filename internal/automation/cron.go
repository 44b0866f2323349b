// Package automation holds the pure rules of the host's automations (the
// ahp-automations:// catalogue): AHP's five-field cron grammar and the
// next occurrence of a schedule, what the scheduler does with occurrences
// it finds due (on time, or missed while the daemon was down), the gates
// and the operations an entry advertises, and the checks a definition
// passes. It does no I/O and reads no clock: the host (internal/host,
// automations.go) passes the time in.
package automation

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Schedule is a parsed cron expression: for each field, the set of values
// it matches, and whether the day fields were restricted (Unix cron: when
// both are, a day matches either).
type Schedule struct {
	minute, hour, dom, month, dow uint64
	domStar, dowStar              bool
	loc                           *time.Location
}

type field struct {
	name     string
	min, max int
	names    []string // index+min is the value, when the field has names
}

var fields = [5]field{
	{name: "minute", min: 0, max: 59},
	{name: "hour", min: 0, max: 23},
	{name: "day of month", min: 1, max: 31},
	{name: "month", min: 1, max: 12, names: []string{"JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"}},
	// 7 is Sunday as well as 0.
	{name: "day of week", min: 0, max: 7, names: []string{"SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"}},
}

// ParseSchedule reads expression (minute hour day-of-month month
// day-of-week, AHP's grammar: *, values, ranges, lists, steps on * or a
// range, month and weekday names) in the IANA time zone timeZone.
func ParseSchedule(expression, timeZone string) (Schedule, error) {
	if timeZone == "" {
		return Schedule{}, fmt.Errorf("schedule: timeZone is required")
	}
	loc, err := time.LoadLocation(timeZone)
	if err != nil {
		return Schedule{}, fmt.Errorf("schedule: time zone %q: %w", timeZone, err)
	}
	parts := strings.Fields(expression)
	if len(parts) != 5 {
		return Schedule{}, fmt.Errorf("schedule %q: want five fields (minute hour day-of-month month day-of-week), got %d", expression, len(parts))
	}
	var sets [5]uint64
	for i, p := range parts {
		set, err := parseField(p, fields[i])
		if err != nil {
			return Schedule{}, fmt.Errorf("schedule %q: %w", expression, err)
		}
		sets[i] = set
	}
	dow := sets[4]
	if dow&(1<<7) != 0 {
		dow |= 1 // 7 is Sunday
	}
	return Schedule{minute: sets[0], hour: sets[1], dom: sets[2], month: sets[3], dow: dow,
		domStar: parts[2] == "*", dowStar: parts[4] == "*", loc: loc}, nil
}

func parseField(text string, f field) (uint64, error) {
	var set uint64
	for _, item := range strings.Split(text, ",") {
		rng, stepText, hasStep := strings.Cut(item, "/")
		lo, hi := f.min, f.max
		switch {
		case rng == "*":
		case rng == "":
			return 0, fmt.Errorf("%s: empty item in %q", f.name, text)
		default:
			a, b, isRange := strings.Cut(rng, "-")
			var err error
			if lo, err = f.value(a); err != nil {
				return 0, err
			}
			hi = lo
			if isRange {
				if hi, err = f.value(b); err != nil {
					return 0, err
				}
				if hi < lo {
					return 0, fmt.Errorf("%s: range %q runs backwards", f.name, rng)
				}
			} else if hasStep {
				return 0, fmt.Errorf("%s: a step applies to * or a range, not %q", f.name, item)
			}
		}
		step := 1
		if hasStep {
			n, err := strconv.Atoi(stepText)
			if err != nil || n <= 0 {
				return 0, fmt.Errorf("%s: step %q must be a positive integer", f.name, stepText)
			}
			step = n
		}
		for v := lo; v <= hi; v += step {
			set |= 1 << v
		}
	}
	return set, nil
}

func (f field) value(text string) (int, error) {
	for i, n := range f.names {
		if strings.EqualFold(text, n) {
			return f.min + i, nil
		}
	}
	n, err := strconv.Atoi(text)
	if err != nil || n < f.min || n > f.max {
		return 0, fmt.Errorf("%s: %q is not a value from %d to %d", f.name, text, f.min, f.max)
	}
	return n, nil
}

// searchYears bounds Next: a schedule that matches no day within it
// (February 31st) never fires.
const searchYears = 8

// Next is the first occurrence strictly after t, or the zero time when the
// schedule matches no date (such as 0 0 31 2 *). It walks the calendar in
// the schedule's zone by month, day, hour and minute, skipping whole units
// that cannot match. A wall time a daylight-saving jump skips does not
// occur that day; one it repeats occurs once.
func (s Schedule) Next(t time.Time) time.Time {
	t = t.In(s.loc).Truncate(time.Minute).Add(time.Minute)
	end := t.AddDate(searchYears, 0, 0)
	for t.Before(end) {
		if s.month&(1<<int(t.Month())) == 0 {
			t = time.Date(t.Year(), t.Month()+1, 1, 0, 0, 0, 0, s.loc)
			continue
		}
		if !s.dayMatches(t) {
			t = time.Date(t.Year(), t.Month(), t.Day()+1, 0, 0, 0, 0, s.loc)
			continue
		}
		if s.hour&(1<<t.Hour()) == 0 {
			next := time.Date(t.Year(), t.Month(), t.Day(), t.Hour()+1, 0, 0, 0, s.loc)
			if !next.After(t) { // a repeated hour: step past it
				next = t.Add(time.Hour).Truncate(time.Hour)
			}
			t = next
			continue
		}
		if s.minute&(1<<t.Minute()) == 0 {
			t = t.Add(time.Minute)
			continue
		}
		if earlier := t.Add(-time.Hour); earlier.Hour() == t.Hour() && earlier.Day() == t.Day() {
			// The second pass of an hour a daylight-saving change
			// repeats: its wall times occurred already.
			t = t.Add(time.Minute)
			continue
		}
		return t
	}
	return time.Time{}
}

func (s Schedule) dayMatches(t time.Time) bool {
	dom := s.dom&(1<<t.Day()) != 0
	dow := s.dow&(1<<int(t.Weekday())) != 0
	if s.domStar || s.dowStar {
		return dom && dow
	}
	return dom || dow
}
