package agenttest

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"unicode/utf8"
)

// What every fake model server shares: the record of what it was asked,
// a listener on loopback only, and server-sent events.

// record keeps what a fake model server saw: its model requests, numbered
// in order, and the requests that were not model requests. The fakes embed
// it, and its Seen and Others are theirs.
type record struct {
	mu     sync.Mutex
	seen   []Seen
	others []string
}

// Seen returns the model requests received so far, in order.
func (r *record) Seen() []Seen {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Seen(nil), r.seen...)
}

// Others returns the requests that were not model requests, as "METHOD
// /path", in order: a CLI that probes or fetches anything but its model
// (an update check, telemetry) shows here.
func (r *record) Others() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.others...)
}

// add numbers s as the next model request, keeps it and returns it.
func (r *record) add(s Seen) Seen {
	r.mu.Lock()
	defer r.mu.Unlock()
	s.N = len(r.seen) + 1
	r.seen = append(r.seen, s)
	return s
}

// ask keeps s as the next model request and returns it, numbered, with
// script's reply to it.
func (r *record) ask(script Script, s Seen) (Seen, Reply) {
	s = r.add(s)
	return s, script.reply(s)
}

// notFound answers a request that is not a model request with a 404, and
// keeps it for Others.
func (r *record) notFound(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	r.others = append(r.others, req.Method+" "+req.URL.Path)
	r.mu.Unlock()
	http.NotFound(w, req)
}

// readBody decodes a model request's JSON body, or answers 400.
func readBody[B any](w http.ResponseWriter, r *http.Request) (body B, ok bool) {
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return body, false
	}
	return body, true
}

// serveLoopback serves h on 127.0.0.1 (never another interface) until the
// test ends, and returns its base URL.
func serveLoopback(t testing.TB, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(h)
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)
	return srv.URL
}

// startStream sends the headers of a server-sent event stream.
func startStream(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
}

// sse sends one server-sent event, data as JSON, with an event line when
// event is not "".
func sse(w http.ResponseWriter, event string, data any) {
	b, _ := json.Marshal(data)
	sseRaw(w, event, string(b))
}

// sseRaw sends one server-sent event whose data is data as it is, and
// flushes it: a streaming client sees each event as it is sent, as from a
// real API, and a CLI's idle timers see it too.
func sseRaw(w http.ResponseWriter, event, data string) {
	if event != "" {
		fmt.Fprintf(w, "event: %s\n", event)
	}
	fmt.Fprintf(w, "data: %s\n\n", data)
	if fl, ok := w.(http.Flusher); ok {
		fl.Flush()
	}
}

// halves splits s in two at a character boundary near its middle: the
// fakes stream a text or a tool call's arguments in pieces, as the real
// APIs do.
func halves(s string) []string {
	half := len(s) / 2
	for half > 0 && !utf8.RuneStart(s[half]) {
		half--
	}
	return []string{s[:half], s[half:]}
}
