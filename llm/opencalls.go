package llm

// OpenCalls returns the calls in items that have no result yet, in order.
// After a crash or an interrupt they are answered before anything else is
// sent: the engine does it for an interrupted turn, the store when it
// closes a turn a crash cut.
func OpenCalls(items []Item) []Call {
	answered := make(map[string]bool)
	for i := range items {
		if res := items[i].Result(); items[i].Role == RoleTool && res != nil {
			answered[res.CallID] = true
		}
	}
	var out []Call
	for i := range items {
		if items[i].Role != RoleAssistant {
			continue
		}
		for _, c := range items[i].Calls() {
			if !answered[c.ID] {
				out = append(out, *c)
			}
		}
	}
	return out
}
