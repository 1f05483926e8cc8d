package agent

import (
	"strconv"
	"strings"
	"time"

	"github.com/ralph-dev/ralph/coordinator/internal/lazyre"
)

// Usage limits (subscription plans) are reported as text, in wordings that
// changed between CLI versions:
//
//	Claude AI usage limit reached|1750708800
//	Claude usage limit reached. Your limit will reset at 3pm (America/Bogota).
//	You've hit your limit · resets 3:20pm (Asia/Shanghai)
//	5-hour limit reached ∙ resets 3pm
//	Limit reached · resets Oct 6, 1pm (Europe/Berlin)
//
// ralph reads them from the result's text only; users want the loop to
// wait for the reset and resume the same task (snarktank/ralph#82).

// usageLimitText is the loose test, for results that already say is_error.
func usageLimitText(s string) bool {
	s = strings.ToLower(s)
	for _, w := range []string{"usage limit", "hit your limit", "limit reached", "rate limit", "limit will reset"} {
		if strings.Contains(s, w) {
			return true
		}
	}
	return false
}

// usageLimitPrefix matches a result text that is nothing but the CLI's own
// usage-limit notice.
var usageLimitPrefix = lazyre.New(`(?i)^(claude( ai)? usage limit reached|you['’]ve hit your (usage )?limit|(5-hour|weekly|opus weekly|session) limit reached|limit reached\s*[·∙•])`)

// usageLimitMessage is the strict test, for results that do not say
// is_error: a short text that starts like the CLI's notice. An agent's
// final message that merely talks about limits does not match.
func usageLimitMessage(s string) bool {
	s = strings.TrimSpace(s)
	return len(s) < 300 && usageLimitPrefix().MatchString(s)
}

var (
	resetEpoch    = lazyre.New(`limit reached\|(\d{9,11})\b`)
	resetISO      = lazyre.New(`\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})`)
	resetIn       = lazyre.New(`(?i)(?:resets?|try again) in ((?:\d+\s*[a-z]+[\s,]*(?:and\s+)?)+)`)
	resetInPart   = lazyre.New(`(?i)(\d+)\s*(hours?|hrs?|h|minutes?|mins?|m|seconds?|secs?|s)\b`)
	resetClock    = lazyre.New(`(?i)resets?\s+(?:at\s+|on\s+)?(?:(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?\s+(\d{1,2})(?:st|nd|rd|th)?,?\s+(?:at\s+)?)?(\d{1,2})(?::(\d{2}))?\s*(am|pm)?(?:\s*\(([^)]+)\))?`)
	monthsByAbbr  = map[string]time.Month{"jan": 1, "feb": 2, "mar": 3, "apr": 4, "may": 5, "jun": 6, "jul": 7, "aug": 8, "sep": 9, "oct": 10, "nov": 11, "dec": 12}
	layoutsForISO = []string{time.RFC3339Nano, "2006-01-02T15:04Z07:00", "2006-01-02 15:04:05Z07:00", "2006-01-02T15:04:05Z0700", "2006-01-02 15:04Z07:00"}
)

// parseResetAt finds when a usage limit resets in text, relative to now;
// the zero time when the text names none.
func parseResetAt(text string, now time.Time) time.Time {
	if m := resetEpoch().FindStringSubmatch(text); m != nil {
		sec, _ := strconv.ParseInt(m[1], 10, 64)
		return time.Unix(sec, 0)
	}
	if m := resetISO().FindString(text); m != "" {
		for _, layout := range layoutsForISO {
			if t, err := time.Parse(layout, m); err == nil {
				return t
			}
		}
	}
	if m := resetIn().FindStringSubmatch(text); m != nil {
		var d time.Duration
		for _, p := range resetInPart().FindAllStringSubmatch(m[1], -1) {
			n, _ := strconv.Atoi(p[1])
			switch unit := strings.ToLower(p[2]); unit[0] {
			case 'h':
				d += time.Duration(n) * time.Hour
			case 'm':
				d += time.Duration(n) * time.Minute
			case 's':
				d += time.Duration(n) * time.Second
			}
		}
		if d > 0 {
			return now.Add(d)
		}
	}
	for _, m := range resetClock().FindAllStringSubmatch(text, -1) {
		if t, ok := clockTime(m, now); ok {
			return t
		}
	}
	return time.Time{}
}

// clockTime resolves "3pm", "15:20", "Oct 6, 1pm", each with an optional
// "(Area/City)" zone, to the next such moment after now.
func clockTime(m []string, now time.Time) (time.Time, bool) {
	monthName, dayS, hourS, minS, ampm, zone := m[1], m[2], m[3], m[4], strings.ToLower(m[5]), m[6]
	if ampm == "" && minS == "" {
		return time.Time{}, false // "resets 5" is not a time
	}
	hour, _ := strconv.Atoi(hourS)
	min := 0
	if minS != "" {
		min, _ = strconv.Atoi(minS)
	}
	switch {
	case min > 59, ampm == "" && hour > 23, ampm != "" && (hour < 1 || hour > 12):
		return time.Time{}, false
	case ampm == "am" && hour == 12:
		hour = 0
	case ampm == "pm" && hour < 12:
		hour += 12
	}
	loc := now.Location()
	if zone != "" {
		if l, err := time.LoadLocation(strings.TrimSpace(zone)); err == nil {
			loc = l
		}
	}
	local := now.In(loc)
	if monthName != "" {
		day, _ := strconv.Atoi(dayS)
		t := time.Date(local.Year(), monthsByAbbr[strings.ToLower(monthName)], day, hour, min, 0, 0, loc)
		if t.Before(now.Add(-24 * time.Hour)) {
			t = t.AddDate(1, 0, 0)
		}
		return t, true
	}
	t := time.Date(local.Year(), local.Month(), local.Day(), hour, min, 0, 0, loc)
	if !t.After(now) {
		t = t.AddDate(0, 0, 1)
	}
	return t, true
}
