// Package window keeps a turn's requests within the model's context window
// (DESIGN §8): it counts what each request sends, reports the budget by
// segment, shortens old tool results and compacts the history through the
// model when a request would pass 90 % of the window, refuses a request
// known to be too big, and caps each tool result when it is recorded.
//
// Counting is incremental: a turn's guard keeps the count of every item it
// has seen, so a round counts only the items added since the last one, and
// a Window remembers the counts of long texts across turns. The provider's
// usage is the truth for what was sent; the tokenizer estimates the rest.
//
// A [Window] plugs into the turn engine as loop.Options.Window.
package window
