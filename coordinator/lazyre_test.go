package coordinator

import (
	"regexp"
	"testing"
)

// Every pattern compiles: a lazy one that did not would panic only on the
// output that first reaches it, far from any test.
func TestLazyRegexpsCompile(t *testing.T) {
	for name, re := range map[string]func() *regexp.Regexp{
		"currentTaskRe": currentTaskRe, "skippedAfterRe": skippedAfterRe, "countedRe": countedRe, "interruptedRe": interruptedRe,
		"promiseRe": promiseRe, "learningRe": learningRe, "todoRe": todoRe, "decisionRe": decisionRe, "anyTagRe": anyTagRe,
		"secretNameRe": secretNameRe, "notSecretName": notSecretName,
	} {
		if re().String() == "" {
			t.Errorf("%s: empty pattern", name)
		}
	}
}
