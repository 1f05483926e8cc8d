package agent

import (
	"strings"

	"github.com/ralph-dev/ralph/coordinator/internal/lazyre"
)

// This file is ralph's one price table. It serves a single purpose: while
// an agent works, its CLI streams each model call's tokens but no cost
// (claude prints total_cost_usd only in its final result line), and
// --max-cost must be enforced before that line, not after an agent that
// keeps calling tools has spent 88 times the cap. An estimate from this
// table is used until the CLI's own figure arrives, which then replaces it.
//
// Prices are Anthropic's list prices in USD per million tokens, with 5
// minute cache writes; the long-context surcharge and batch discounts are
// left out. Source: platform.claude.com/docs/en/about-claude/pricing,
// checked 2026-11. A model not in the table is priced by its family
// (opus, sonnet, haiku, …) at the family's latest price; a model of no
// known family has no estimate, and --max-cost then sees its cost only when
// the CLI reports it.

// Price is a model's price in USD per million tokens.
type Price struct {
	Input, Output, CacheWrite, CacheRead float64
}

var (
	opus45Price  = Price{Input: 5, Output: 25, CacheWrite: 6.25, CacheRead: 0.50}
	opus4Price   = Price{Input: 15, Output: 75, CacheWrite: 18.75, CacheRead: 1.50}
	sonnetPrice  = Price{Input: 3, Output: 15, CacheWrite: 3.75, CacheRead: 0.30}
	haiku45Price = Price{Input: 1, Output: 5, CacheWrite: 1.25, CacheRead: 0.10}
	fable5Price  = Price{Input: 10, Output: 50, CacheWrite: 12.50, CacheRead: 1}
	fable51Price = Price{Input: 10, Output: 50, CacheWrite: 12.50, CacheRead: 0.25}
)

// prices holds the models by their API name without its date suffix.
var prices = map[string]Price{
	"claude-fable-5-1":  fable51Price,
	"claude-mythos-5-1": fable51Price,
	"claude-fable-5":    fable5Price,
	"claude-mythos-5":   fable5Price,
	"claude-opus-5":     opus45Price,
	"claude-opus-4-8":   opus45Price,
	"claude-opus-4-7":   opus45Price,
	"claude-opus-4-6":   opus45Price,
	"claude-opus-4-5":   opus45Price,
	"claude-opus-4-1":   opus4Price,
	"claude-opus-4":     opus4Price,
	"claude-opus-4-0":   opus4Price,
	"claude-3-opus":     opus4Price,
	"claude-sonnet-4-6": sonnetPrice,
	"claude-sonnet-4-5": sonnetPrice,
	"claude-sonnet-4":   sonnetPrice,
	"claude-sonnet-4-0": sonnetPrice,
	"claude-3-7-sonnet": sonnetPrice,
	"claude-3-5-sonnet": sonnetPrice,
	"claude-haiku-4-5":  haiku45Price,
	"claude-3-5-haiku":  {Input: 0.80, Output: 4, CacheWrite: 1, CacheRead: 0.08},
	"claude-3-haiku":    {Input: 0.25, Output: 1.25, CacheWrite: 0.30, CacheRead: 0.03},
}

// families price a model the table does not name, by the first family
// word in its name: an alias (sonnet), a cloud's name for it
// (us.anthropic.claude-sonnet-4-5-v1:0), a version newer than the table.
var families = []struct {
	word  string
	price Price
}{
	{"fable", fable51Price},
	{"mythos", fable51Price},
	{"opus", opus45Price},
	{"sonnet", sonnetPrice},
	{"haiku", haiku45Price},
}

// dateSuffix is an API name's snapshot date ("-20250929"). A context
// marker Claude Code appends ("claude-opus-4-6[1m]") is cut off first.
var dateSuffix = lazyre.New(`-\d{8}$`)

// PriceOf returns model's price, and false when neither the table nor a
// family knows it.
func PriceOf(model string) (Price, bool) {
	name := strings.ToLower(strings.TrimSpace(model))
	if i := strings.IndexByte(name, '['); i >= 0 {
		name = name[:i]
	}
	name = dateSuffix().ReplaceAllString(name, "")
	if p, ok := prices[name]; ok {
		return p, true
	}
	for _, f := range families {
		if strings.Contains(name, f.word) {
			return f.price, true
		}
	}
	return Price{}, false
}

// Tokens are one model call's tokens by kind, as the Messages API counts
// them: Input excludes the cache's.
type Tokens struct {
	Input, CacheWrite, CacheRead, Output int64
}

// Cost is what tokens cost at p, in USD.
func (p Price) Cost(t Tokens) float64 {
	return (float64(t.Input)*p.Input + float64(t.CacheWrite)*p.CacheWrite +
		float64(t.CacheRead)*p.CacheRead + float64(t.Output)*p.Output) / 1e6
}
