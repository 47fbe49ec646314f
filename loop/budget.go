package loop

import (
	"github.com/reinhq/rein/dispatch"
	"github.com/reinhq/rein/llm"
)

// addUsage adds a round's usage and its cost.
func (r *run) addUsage(u llm.Usage) {
	r.st.Usage = r.st.Usage.Add(u)
	if r.o.Price != (Price{}) {
		r.st.Cost += r.o.Price.Cost(u)
	}
}

// budgetSpent returns the stop reason of the first spent budget, or "".
func (r *run) budgetSpent() StopReason {
	b := r.o.Budget
	st := r.st
	switch {
	case b.Tokens > 0 && st.Usage.Total() >= b.Tokens:
		return StopForcedTokens
	case b.Cost > 0 && st.Cost >= b.Cost:
		return StopForcedCost
	case b.Time > 0 && st.Elapsed+r.o.Now().Sub(r.began) >= b.Time:
		return StopForcedTime
	}
	return ""
}

// detectLoop counts each call of the round by name, canonical arguments and
// result; it reports whether one was seen LoopThreshold times this turn.
func (r *run) detectLoop(res roundResult) bool {
	if r.o.LoopThreshold < 0 || res.batch == nil {
		return false
	}
	if r.st.LoopSeen == nil {
		r.st.LoopSeen = make(map[uint64]int)
	}
	tripped := false
	for i, c := range res.calls {
		if i >= len(res.batch.Results) {
			break
		}
		k := fnvString(fnvOffset, c.Name)
		k = fnvString(k*fnvPrime, dispatch.CanonicalArgs(c.Args))
		k = fnvString(k*fnvPrime, res.batch.Results[i].Content)
		r.st.LoopSeen[k]++
		if r.st.LoopSeen[k] >= r.o.LoopThreshold {
			tripped = true
		}
	}
	return tripped
}

// FNV-1a, inline: hashing a call must not allocate.
const (
	fnvOffset uint64 = 14695981039346656037
	fnvPrime  uint64 = 1099511628211
)

func fnvString(h uint64, s string) uint64 {
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= fnvPrime
	}
	return h
}
