package kb

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// benchCorpus writes n Markdown files of about 2 KB each, words drawn from
// a 5,000-word vocabulary with a skewed (Zipf) frequency, like prose.
func benchCorpus(b *testing.B, n int) (dir string, vocab []string) {
	b.Helper()
	dir = b.TempDir()
	vocab = make([]string, 5000)
	for i := range vocab {
		vocab[i] = fmt.Sprintf("w%x%c", i*7919, 'a'+rune(i%26))
	}
	zipf := rand.NewZipf(rand.New(rand.NewPCG(3, 4)), 1.1, 2, uint64(len(vocab)-1))
	for i := range n {
		var sb strings.Builder
		fmt.Fprintf(&sb, "# Document %d\n\n", i)
		for line := range 40 {
			for range 8 {
				sb.WriteString(vocab[zipf.Uint64()])
				sb.WriteByte(' ')
			}
			sb.WriteByte('\n')
			if line%10 == 9 {
				sb.WriteByte('\n')
			}
		}
		sub := filepath.Join(dir, fmt.Sprintf("d%02d", i%100))
		os.MkdirAll(sub, 0o755)
		if err := os.WriteFile(filepath.Join(sub, fmt.Sprintf("f%05d.md", i)), []byte(sb.String()), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	return dir, vocab
}

// BenchmarkAdd10k is `rein kb add` of 10,000 files into a fresh store.
func BenchmarkAdd10k(b *testing.B) {
	dir, _ := benchCorpus(b, 10_000)
	for b.Loop() {
		st := openStore(b)
		rep, err := Add(context.Background(), st, "bench", []string{dir}, AddOptions{RelativeTo: dir})
		if err != nil {
			b.Fatal(err)
		}
		if rep.Files != 10_000 {
			b.Fatalf("%d files", rep.Files)
		}
		b.ReportMetric(float64(rep.Chunks), "chunks")
	}
}

// BenchmarkQuery10k is rag's search of a 10,000-file base: queries of 3
// words of mixed frequency, and seed queries (a 25-word user message over
// 3 bases), their words drawn evenly from the vocabulary (mostly rare
// words) or, like prose, with the corpus's own frequencies (mostly common
// words); it reports the p50 and p99 latency.
func BenchmarkQuery10k(b *testing.B) {
	dir, vocab := benchCorpus(b, 10_000)
	st := openStore(b)
	if _, err := Add(context.Background(), st, "bench", []string{dir}, AddOptions{RelativeTo: dir}); err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	zipf := rand.NewZipf(rand.New(rand.NewPCG(7, 8)), 1.1, 2, uint64(len(vocab)-1))
	for _, tc := range []struct {
		name  string
		words int
		seed  bool
		zipf  bool
	}{{"rag-3-words", 3, false, false}, {"seed-25-words", 25, true, false}, {"seed-25-prose-words", 25, true, true}} {
		b.Run(tc.name, func(b *testing.B) {
			var lat []time.Duration
			for b.Loop() {
				ws := make([]string, tc.words)
				for i := range ws {
					if tc.zipf {
						ws[i] = vocab[zipf.Uint64()]
					} else {
						ws[i] = vocab[rng.IntN(len(vocab))]
					}
				}
				q := strings.Join(ws, " ")
				start := time.Now()
				if tc.seed {
					Seed(context.Background(), st, []string{"bench", "bench", "bench"}, q)
				} else if _, err := st.SearchKB(context.Background(), "bench", q, ragPassages); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(start))
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
		})
	}
}
