package kb

import (
	"context"
	"errors"

	"github.com/reinhq/rein/tool"
)

// Gate computes has_kb for a turn attaching kbs: on when every one of them
// is in the index. A base that is missing, or an index that cannot be
// read, is an error, so the gate fails closed and rag and kb_files are not
// mounted. It runs whenever a turn's tools are composed, so it only
// checks that the bases exist: counting their files and passages (KB) took
// longer than the seed itself on a large index.
func Gate(idx Index, kbs []string) tool.Gate {
	return func(ctx context.Context) (bool, error) {
		if len(kbs) == 0 {
			return false, nil
		}
		if idx == nil {
			return false, errors.New("no store to read knowledge bases from")
		}
		for _, name := range kbs {
			if err := idx.KBExists(ctx, name); err != nil {
				return false, err
			}
		}
		return true, nil
	}
}
