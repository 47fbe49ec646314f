package event

// ContextReport is the context budget of one request by segment (DESIGN
// §8), carried by the Context event after each round and printed by `rein
// context`. Its segments add up to Total.
type ContextReport struct {
	// Model is the model the request went to.
	Model string `json:"model,omitempty"`
	// Window is the model's context window in tokens (input plus output).
	Window int `json:"window"`
	// WindowEstimated says the window is a guess (the model is not in the
	// table and no configuration names it).
	WindowEstimated bool `json:"window_estimated,omitempty"`
	// Input is what the request sent: the provider's count when it reported
	// usage (Source "provider"), else the estimate.
	Input int `json:"input"`
	// Reserve is the room kept for the answer: the request's output cap, or
	// the model's maximum output.
	Reserve int `json:"reserve"`
	// Used is Input plus Reserve; Free is what is left of the window (never
	// negative).
	Used int `json:"used"`
	Free int `json:"free"`
	// Total is the larger of Window and Used: the segments add up to it.
	Total int `json:"total"`
	// Percent is Used as a percentage of Window.
	Percent float64 `json:"percent"`
	// Source is "provider" when Input is the provider's count, "estimate"
	// when it was counted here.
	Source string `json:"source"`
	// Counter names the tokenizer of the estimates: "o200k_base",
	// "cl100k_base", or "bytes/4" when no tokenizer could be loaded.
	Counter string `json:"counter"`
	// Estimated is true when the window or the counts are guesses. The split
	// into segments is always counted here, then scaled to Input.
	Estimated bool `json:"estimated"`
	// Segments are system, instructions, memory, knowledge, skills, tools,
	// history, tool_results, reserve and free, in that order.
	Segments []ContextSegment `json:"segments"`
}

// ContextSegment is one part of a context budget.
type ContextSegment struct {
	Name   string `json:"name"`
	Tokens int    `json:"tokens"`
}
