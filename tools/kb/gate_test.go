package kb

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"

	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/tool"
)

func TestGateFromTheStore(t *testing.T) {
	st := openStore(t)
	ctx := context.Background()
	if _, err := st.PutKBDocs(ctx, "docs", nil); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		kbs     []string
		on      bool
		wantErr error
	}{
		{"none attached", nil, false, nil},
		{"attached and there", []string{"docs"}, true, nil},
		{"one missing", []string{"docs", "gone"}, false, store.ErrNotFound},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			on, err := Gate(st, tc.kbs)(ctx)
			if on != tc.on || !errors.Is(err, tc.wantErr) {
				t.Fatalf("gate = %v, %v; want %v, %v", on, err, tc.on, tc.wantErr)
			}
		})
	}
}

func TestStoreErrorLeavesRagUnmounted(t *testing.T) {
	st := openStore(t)
	ctx := context.Background()
	if _, err := st.PutKBDocs(ctx, "docs", nil); err != nil {
		t.Fatal(err)
	}
	kbs := []string{"docs"}
	compose := func() (*tool.Set, *tool.Report) {
		return tool.Compose(ctx, tool.Composition{
			Registry: tool.NewSet(Rag(st, kbs), Files(st, kbs)),
			Gates:    map[tool.Flag]tool.Gate{tool.HasKB: Gate(st, kbs)},
			Logger:   slog.New(slog.NewTextHandler(io.Discard, nil)),
		})
	}
	set, _ := compose()
	if _, ok := set.Get(RagName); !ok {
		t.Fatalf("rag not mounted with the base there: %v", set.Names())
	}
	st.Close()
	set, rep := compose()
	if set.Len() != 0 {
		t.Fatalf("mounted after a store error: %v", set.Names())
	}
	if rep.Flags[0].Flag != tool.HasKB || rep.Flags[0].Err == "" {
		t.Fatalf("flags = %+v", rep.Flags)
	}
}
