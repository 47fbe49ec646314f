package loop

import (
	"fmt"
	"time"
)

// The directives the engine appends as user-role items (DESIGN §2.2, §2.3).
// They are marked llm.OriginDirective: kept in the turn that needed them and
// left out of the context of later turns.
const (
	settleDirective = "[rein] The exploration budget for this request is spent. Start nothing new: no new searches or optional work. " +
		"Only finish what earlier steps already started — a pending question to the user, a state change, a write — using tools for that alone. " +
		"Then stop calling tools and give your final answer."
	continueDirective = "[rein] Your previous reply was cut off by the output limit. Continue exactly where it stopped, without repeating what you already wrote."
	nudgeDirective    = "[rein] Your last reply contained no visible answer. Either call a tool you still need, or write the answer for the user now."
	resumeDirective   = "[ask_user resolved] Continue the user's original request with these answers; do not stop at an acknowledgement."
)

// finishDirective is the forced final round's directive; it says why tools
// are gone so the model can tell the user what remains.
func finishDirective(reason StopReason) string {
	why := "The round budget for this request ran out before every gap was closed."
	switch reason {
	case StopForcedTokens:
		why = "The token budget for this request is spent."
	case StopForcedCost:
		why = "The cost budget for this request is spent."
	case StopForcedTime:
		why = "The time budget for this request is spent."
	case StopForcedLoop:
		why = "The same tool call kept returning the same result."
	case StopForcedError:
		why = "A step failed."
	}
	return "[rein] " + why + " Tools can no longer be called. Answer now with what you have gathered, and say briefly what remains uncertain or unfinished."
}

// interruptMarker tells the model, in later turns, that this one was cut.
func interruptMarker(after time.Duration) string {
	return fmt.Sprintf("[rein] The previous turn was interrupted by the user after %.1fs. Calls that were running were aborted; "+
		"check the current state before retrying anything.", after.Seconds())
}
