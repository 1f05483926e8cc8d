package agent

import (
	"testing"
	"time"
)

func TestParseResetAt(t *testing.T) {
	// Saturday 21 November 2026, 10:00 UTC.
	now := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	utc := func(mo time.Month, d, h, m int) time.Time { return time.Date(2026, mo, d, h, m, 0, 0, time.UTC) }
	tests := []struct {
		text string
		want time.Time
	}{
		{"Claude AI usage limit reached|1795341600", time.Unix(1795341600, 0)},
		{"Claude usage limit reached. Your limit will reset at 3pm (America/Bogota).", utc(11, 21, 20, 0)},
		{"You've hit your limit · resets 3:20pm (Asia/Shanghai)", utc(11, 22, 7, 20)}, // 15:20 in Shanghai has passed today
		{"5-hour limit reached ∙ resets 3pm", utc(11, 21, 15, 0)},
		{"5-hour limit reached ∙ resets 9am", utc(11, 22, 9, 0)}, // tomorrow
		{"Limit reached · resets 12am (UTC)", utc(11, 22, 0, 0)},
		{"Limit reached · resets 12:30pm (UTC)", utc(11, 21, 12, 30)},
		{"Weekly limit reached · resets Nov 24, 1pm (Europe/Berlin)", utc(11, 24, 12, 0)},
		{"Opus weekly limit reached · resets Jan 3 at 5am (UTC)", time.Date(2027, 1, 3, 5, 0, 0, 0, time.UTC)},
		{"Rate limited; resets at 2026-11-21T18:30:00Z", utc(11, 21, 18, 30)},
		{"Too many requests, try again in 2 hours 30 minutes", utc(11, 21, 12, 30)},
		{"usage limit: resets in 45m", utc(11, 21, 10, 45)},
		{"resets at 17:05 (Nowhere/Invalid)", utc(11, 21, 17, 5)}, // an unknown zone falls back to now's
		{"API Error: Request rejected (429)", time.Time{}},
		{"resets 5", time.Time{}},
		{"resets 13pm", time.Time{}},
		{"", time.Time{}},
	}
	for _, tt := range tests {
		if got := parseResetAt(tt.text, now); !got.Equal(tt.want) {
			t.Errorf("parseResetAt(%q) = %s, want %s", tt.text, got.UTC(), tt.want.UTC())
		}
	}
}

func TestUsageLimitText(t *testing.T) {
	tests := []struct {
		text         string
		loose, whole bool
	}{
		{"Claude AI usage limit reached|1750708800", true, true},
		{"You've hit your limit · resets 3pm (Europe/Paris)", true, true},
		{"You’ve hit your limit · resets 3pm", true, true},
		{"5-hour limit reached ∙ resets 3pm", true, true},
		{"Limit reached · resets 11:30am (Asia/Calcutta) · /upgrade to Max", true, true},
		{"API Error: Request rejected (429) · per-minute rate limit", true, false},
		{"I documented the usage limit and when it resets.", true, false},
		{"All tasks done. <promise>COMPLETE</promise>", false, false},
	}
	for _, tt := range tests {
		if got := usageLimitText(tt.text); got != tt.loose {
			t.Errorf("usageLimitText(%q) = %v", tt.text, got)
		}
		if got := usageLimitMessage(tt.text); got != tt.whole {
			t.Errorf("usageLimitMessage(%q) = %v", tt.text, got)
		}
	}
}
