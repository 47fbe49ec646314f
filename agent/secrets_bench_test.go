package agent

import "testing"

// BenchmarkTurnRedactor is what rein serve adds to every turn: the
// redactor built from the environment and the config's secrets.
func BenchmarkTurnRedactor(b *testing.B) {
	src := NewSecrets(nil)
	b.ReportAllocs()
	for b.Loop() {
		src.Redactor("/tmp/ws")
	}
}
