package loop

// redactedError is an error whose text went through Options.Redact: a
// provider may echo a key in its error body, and a failed turn's error is
// printed (--json, stderr) and stored. Unwrap keeps errors.Is and errors.As
// seeing the cause (a *llm.Error stays one).
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// redactErr returns err with its text redacted, or err itself when there
// was nothing to remove.
func (r *run) redactErr(err error) error {
	if err == nil || r.o.Redact == nil {
		return err
	}
	msg := err.Error()
	if red := r.o.Redact(msg); red != msg {
		return &redactedError{msg: red, err: err}
	}
	return err
}
