package agent

import (
	"net/http"
	"testing"
	"time"

	"github.com/ralph-dev/ralph/coordinator/internal/lazyre"
)

// Every pattern compiles: a lazy one that did not would panic only on the
// rare output that first reaches it, far from any test.
func TestLazyRegexpsCompile(t *testing.T) {
	if n, err := lazyre.CompileAll(); n == 0 || err != nil {
		t.Fatalf("%d patterns: %v", n, err)
	}
}

// httpDate reads what net/http's ParseTime reads, for retry-after dates.
func TestHTTPDateAsNetHTTP(t *testing.T) {
	for _, v := range []string{"Sun, 06 Nov 1994 08:49:37 GMT", "Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994", "soon", "", "120"} {
		want, werr := http.ParseTime(v)
		got, ok := httpDate(v)
		if ok != (werr == nil) || !got.Equal(want) {
			t.Errorf("httpDate(%q) = %v, %v; net/http: %v, %v", v, got, ok, want, werr)
		}
	}
	now := time.Date(1994, 11, 6, 8, 49, 0, 0, time.UTC)
	if got := headerRetryAt(map[string]string{"retry-after": "Sun, 06 Nov 1994 08:49:37 GMT"}, now); !got.Equal(now.Add(37 * time.Second)) {
		t.Errorf("headerRetryAt = %v", got)
	}
}
