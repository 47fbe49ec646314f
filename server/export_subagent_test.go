package server

import "github.com/reinhq/rein/event"

// NotifierForTest exposes a connection's notifier to the external tests:
// the events of a thread in, its notifications out through send.
func NotifierForTest(send func(string, any)) func(event.Event) { return newNotifier(send).handle }
