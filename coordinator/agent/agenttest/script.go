package agenttest

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// A fake model server (FakeAPI, FakeResponses, FakeChat, FakeGemini)
// answers each request as its Script says, in its own wire protocol: the
// same scenario runs against every real CLI.

// Seen is what a fake model server saw of one model request.
type Seen struct {
	N        int    // 1-based count of the model requests the server got
	Model    string // the model the request names
	UserText string // the text of every user message, tool results included, in order
	// ToolResult is set when the request's last message carries the
	// result of a tool call the server asked for.
	ToolResult     bool
	ToolResultText string
	// The request offered tools (a CLI's side calls, a title or a
	// routing call, offer none).
	HasTools bool
}

// Reply is what a fake model server answers to one request. The zero Reply
// is the final text FakeFinal.
type Reply struct {
	// Status, when not zero, answers with this HTTP error (429, 529,
	// 500…) in the protocol's error body, instead of an answer.
	Status int
	// RetryIn, with Status, is how long the error asks the client to
	// wait before it tries again, said as the protocol's servers say it
	// (see retryText); 0 says nothing of when.
	RetryIn time.Duration
	// Hang starts an answer and then sends nothing until the client goes
	// away.
	Hang bool
	// Write asks for a call of the CLI's file-writing tool.
	Write *FileWrite
	// Command asks for a call of the CLI's shell tool running it.
	Command string
	// Final is the final text when there is no tool call; "" is FakeFinal.
	Final string
}

// FileWrite is a tool call that writes Content to Path.
type FileWrite struct{ Path, Content string }

// Script decides the Reply to each request.
type Script func(Seen) Reply

// reply is s's answer to a request: the zero Reply when s is nil.
func (s Script) reply(seen Seen) Reply {
	if s == nil {
		return Reply{}
	}
	return s(seen)
}

// retryText is the sentence an error message of the OpenAI and Anthropic
// APIs ends with when it says when to try again ("Please try again in
// 2s."), rounded up to a second; "" for 0. The CLIs pass the message on,
// and ralph reads the delay from it.
func retryText(d time.Duration) string {
	if d <= 0 {
		return ""
	}
	return fmt.Sprintf(" Please try again in %ds.", wholeSeconds(d))
}

// wholeSeconds is d in seconds, rounded up: the APIs state delays so.
func wholeSeconds(d time.Duration) int { return int(math.Ceil(d.Seconds())) }

// WriteThenFinal is the common scenario: to a request without a tool
// result whose user text holds want, a call writing content to path; to
// anything else, FakeFinal.
func WriteThenFinal(want, path, content string) Script {
	return func(s Seen) Reply {
		if s.ToolResult || !s.HasTools || !strings.Contains(s.UserText, want) {
			return Reply{}
		}
		return Reply{Write: &FileWrite{Path: path, Content: content}}
	}
}

// Always answers every request with r: Always(Reply{Status: 429}) is a
// rate limit that never ends.
func Always(r Reply) Script {
	return func(Seen) Reply { return r }
}

// EndlessWrites answers every request, tool results included, with one
// more write: of the file it returns for the n-th request. An agent that
// never finishes.
func EndlessWrites(file func(n int) (path, content string)) Script {
	return func(s Seen) Reply {
		if !s.HasTools {
			return Reply{Final: "ralph"} // a side call: a title, a route
		}
		p, c := file(s.N)
		return Reply{Write: &FileWrite{Path: p, Content: c}}
	}
}
