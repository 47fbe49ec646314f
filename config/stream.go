package config

import (
	"fmt"
	"strings"
)

// Stream is the [stream] table: the caps on what one model call may send,
// which a hostile or broken model stream is cut at (loop.Options
// MaxRoundOutput and MaxCallArgs). A key left out keeps the default (4 MiB
// and 1 MiB); "none" (or -1) is no cap.
//
//	[stream]
//	max_round_output   = "4MiB"  # text, reasoning and calls of one model call
//	max_call_arguments = "1MiB"  # the arguments of one call
//
// The silence a provider may keep before its call is cut is a provider
// setting (idle_timeout), since reasoning models differ in how long they
// pause.
type Stream struct {
	// MaxRoundOutput caps the bytes of one model call: visible text,
	// reasoning, and every call's name and arguments.
	MaxRoundOutput int64 `toml:"max_round_output"`
	// MaxCallArguments caps the bytes of one call's arguments.
	MaxCallArguments int64 `toml:"max_call_arguments"`

	// errs are what UnmarshalTOML found wrong, reported by check.
	errs []error
}

// StreamKeys are the settings of the [stream] table.
var StreamKeys = []string{"max_round_output", "max_call_arguments"}

// The defaults of the [stream] table, for errors; package loop holds the
// values it uses (DefaultMaxRoundOutput, DefaultMaxCallArgs).
const (
	defaultRoundOutput = 4 << 20
	defaultCallArgs    = 1 << 20
)

// UnmarshalTOML reads the [stream] table: sizes as in [sandbox] (a number
// of bytes or a string with a unit), "none" (or -1) for no cap.
func (s *Stream) UnmarshalTOML(v any) error {
	*s = Stream{}
	t, ok := v.(map[string]any)
	if !ok {
		s.errs = append(s.errs, fmt.Errorf("stream: want a table ([stream] with %s), not %s", strings.Join(StreamKeys, ", "), tomlType(v)))
		return nil
	}
	for _, k := range sortedKeys(t) {
		var err error
		switch k {
		case "max_round_output":
			s.MaxRoundOutput, err = parseSize(t[k], defaultRoundOutput)
		case "max_call_arguments":
			s.MaxCallArguments, err = parseSize(t[k], defaultCallArgs)
		default:
			s.errs = append(s.errs, fmt.Errorf("unknown setting stream.%s (the [stream] settings are %s)", k, strings.Join(StreamKeys, ", ")))
			continue
		}
		if err != nil {
			s.errs = append(s.errs, fmt.Errorf("stream: %s %s: %w", k, show(t[k]), err))
		}
	}
	return nil
}

func (s *Stream) check() []error { return s.errs }
