package protocol

// MethodThreadUnsubscribe ends the connection's notifications of a thread,
// so that a client that looked at many threads (a page switching between
// them) lets the server forget the idle ones.
const MethodThreadUnsubscribe = "thread/unsubscribe"

// ThreadUnsubscribeParams are the params of thread/unsubscribe.
type ThreadUnsubscribeParams struct {
	ThreadID string `json:"threadId"`
}
