package tool

import (
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/reinhq/rein/llm"
)

type llmSpec = llm.ToolSpec

type llmBuiltin = llm.Builtin

// Set is an ordered set of tools by name: the tools a turn may call. It is
// safe for concurrent use, because a tool such as load_tools may add to the
// live set while a round runs (the next round offers what it added). The
// zero value is an empty set ready to use.
type Set struct {
	mu      sync.RWMutex
	order   []Tool
	index   map[string]int
	version uint64
}

// NewSet returns a set of the tools, in order. A later tool with the name
// of an earlier one is dropped (composition de-duplicates keeping the first).
func NewSet(tools ...Tool) *Set {
	s := &Set{}
	for _, t := range tools {
		s.Add(t)
	}
	return s
}

// Add appends t unless a tool of that name is present; it reports whether t
// was added.
func (s *Set) Add(t Tool) bool {
	name := t.Spec().Name
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.index == nil {
		s.index = make(map[string]int)
	}
	if _, ok := s.index[name]; ok {
		return false
	}
	s.index[name] = len(s.order)
	s.order = append(s.order, t)
	s.version++
	return true
}

// Remove drops the tool named name, if present.
func (s *Set) Remove(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i, ok := s.index[name]
	if !ok {
		return
	}
	s.order = append(s.order[:i:i], s.order[i+1:]...)
	delete(s.index, name)
	for j := i; j < len(s.order); j++ {
		s.index[s.order[j].Spec().Name] = j
	}
	s.version++
}

// Version changes whenever the set does, so a reader can tell cheaply
// whether the specs it built are still current.
func (s *Set) Version() uint64 {
	if s == nil {
		return 0
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.version
}

// Get returns the tool named name.
func (s *Set) Get(name string) (Tool, bool) {
	if s == nil {
		return nil, false
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	i, ok := s.index[name]
	if !ok {
		return nil, false
	}
	return s.order[i], true
}

// Len returns the number of tools.
func (s *Set) Len() int {
	if s == nil {
		return 0
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.order)
}

// Tools returns the tools in order, in a slice the caller may keep.
func (s *Set) Tools() []Tool {
	if s == nil {
		return nil
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return append([]Tool(nil), s.order...)
}

// Names returns the tool names in order.
func (s *Set) Names() []string {
	if s == nil {
		return nil
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]string, len(s.order))
	for i, t := range s.order {
		out[i] = t.Spec().Name
	}
	return out
}

// Specs returns the specs offered to the model, in order.
func (s *Set) Specs() []llm.ToolSpec {
	if s == nil {
		return nil
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]llm.ToolSpec, len(s.order))
	for i, t := range s.order {
		out[i] = t.Spec().LLM()
	}
	return out
}

// NotFound returns the message given to a model that called a tool this turn
// does not have.
func (s *Set) NotFound(name string) string {
	names := s.Names()
	sort.Strings(names)
	avail := "none"
	if len(names) > 0 {
		avail = strings.Join(names, ", ")
	}
	return fmt.Sprintf("no tool named %q here; available: %s", name, avail)
}
