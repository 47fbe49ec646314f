package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/reinhq/rein/store"
)

// resolveThread returns the full id of the thread id names in st: the id
// itself or a unique prefix of it (store.FindThread). An unknown id and an
// ambiguous prefix are usage errors that say what to do.
func resolveThread(ctx context.Context, st *store.Store, id string) (string, error) {
	t, err := st.FindThread(ctx, id)
	switch {
	case err == nil:
		return t.ID, nil
	case errors.Is(err, store.ErrNotFound):
		return "", usageError(fmt.Errorf("no thread %s in %s (rein sessions list shows them)", id, st.Path()))
	case errors.Is(err, store.ErrAmbiguous):
		return "", usageError(err)
	}
	return "", err
}
