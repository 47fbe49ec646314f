package cli

import "testing"

// BenchmarkTurnRedactor is what rein serve adds to every turn: the
// redactor built from the environment and the config's secret source.
func BenchmarkTurnRedactor(b *testing.B) {
	src := newSecretSource(nil)
	b.ReportAllocs()
	for b.Loop() {
		src.redact("/tmp/ws")
	}
}
