package record

import "strings"

// MaxThreadSearch bounds ThreadQuery.Search in bytes: a title is at most 80
// runes, so a longer search can match nothing.
const MaxThreadSearch = 320

// ThreadQuery selects a page of threads, most recently updated first.
type ThreadQuery struct {
	// Limit is the page's size; <= 0 is every thread.
	Limit int
	// Cursor is the next cursor of the previous page; "" starts at the
	// beginning.
	Cursor string
	// Owned keeps only the threads whose Owner is Owner ("" included):
	// what a connection with a named token may see.
	Owned bool
	Owner string
	// Search keeps only the threads whose title (the first user message,
	// shortened) contains it, case-insensitively; "" keeps every thread.
	// At most MaxThreadSearch bytes.
	Search string
	// Children lists sub-agents' threads too; without it they are left
	// out (a sub-agent's thread is read through its parent).
	Children bool
}

// LikePattern is s as the pattern of SQL's LIKE ... ESCAPE '\' that
// matches any text containing s: its %, _ and \ match themselves.
func LikePattern(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return "%" + r.Replace(s) + "%"
}
