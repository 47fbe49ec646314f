package window

import "github.com/reinhq/rein/llm"

// Segment is a part of the context budget (DESIGN §8).
type Segment uint8

// Segments of a request, in report order. System is the system prompt less
// the blocks the caller named (Instructions, Memory, Knowledge, Skills);
// History is every item but tool results; Reserve is the room kept for the
// answer and Free what is left of the window.
const (
	System Segment = iota
	Instructions
	Memory
	Knowledge
	Skills
	Tools
	History
	ToolResults
	Reserve
	Free
	numSegments
)

// inputSegments are the segments of what a request sends.
const inputSegments = Reserve

var segmentNames = [numSegments]string{"system", "instructions", "memory", "knowledge", "skills", "tools", "history", "tool_results", "reserve", "free"}

// String returns the segment's name in reports ("tool_results").
func (s Segment) String() string {
	if s < numSegments {
		return segmentNames[s]
	}
	return "unknown"
}

// Block is a named part of the system prompt, so the report can show what
// the instructions, the memory or the skills manifest cost. Its Text must
// be part of the system prompt as sent.
type Block struct {
	Segment Segment
	Text    string
}

// classify puts an item in History or ToolResults.
func classify(it *llm.Item) Segment {
	if it.Role == llm.RoleTool {
		return ToolResults
	}
	return History
}
