package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"github.com/reinhq/rein/protocol"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/reinhq/rein/llm/scripted"
	"github.com/reinhq/rein/loop"
	"github.com/reinhq/rein/server"
	"github.com/reinhq/rein/tool"
)

// wsWire is a WebSocket connection.
type wsWire struct{ c *websocket.Conn }

func (w wsWire) send(data []byte) error {
	return w.c.Write(context.Background(), websocket.MessageText, data)
}

func (w wsWire) recv() ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, data, err := w.c.Read(ctx)
	return data, err
}

func (w wsWire) close() { w.c.Close(websocket.StatusNormalClosure, "") }

// wsServer serves s over WebSocket on a loopback test server and returns a
// function that opens a client connection.
func wsServer(t *testing.T, s *server.Server) func(t *testing.T) *client {
	t.Helper()
	hs := httptest.NewServer(s.Handler(""))
	t.Cleanup(hs.Close)
	return func(t *testing.T) *client {
		t.Helper()
		c, _, err := websocket.Dial(t.Context(), "ws"+strings.TrimPrefix(hs.URL, "http"), nil)
		if err != nil {
			t.Fatal(err)
		}
		c.SetReadLimit(server.MaxMessageSize)
		w := wsWire{c}
		t.Cleanup(w.close)
		return &client{t: t, w: w}
	}
}

// sessionTools are a tool that waits for the test, one that writes partial
// output and runs until interrupted, and ask_user.
func sessionTools(release <-chan struct{}) []tool.Tool {
	work := &fakeTool{spec: tool.Spec{Name: "work", Access: tool.ReadOnly}, run: func(ctx context.Context, _ tool.Call) (tool.Output, error) {
		select {
		case <-release:
			return tool.Output{Text: "worked"}, nil
		case <-ctx.Done():
			return tool.Output{}, ctx.Err()
		}
	}}
	slow := &fakeTool{spec: tool.Spec{Name: "slow", Access: tool.ReadOnly}, run: func(ctx context.Context, c tool.Call) (tool.Output, error) {
		io.WriteString(c.Partial, "line 1\nline 2\n")
		<-ctx.Done()
		return tool.Output{}, ctx.Err()
	}}
	ask := &fakeTool{spec: tool.Spec{Name: "ask_user", Access: tool.ReadOnly, Pauses: true}, run: func(context.Context, tool.Call) (tool.Output, error) {
		return tool.Output{Text: "[awaiting user reply]", Pause: &tool.Pause{Kind: tool.PauseAskUser, Questions: []tool.Question{{ID: "q1", Prompt: "Which colour?"}}}}, nil
	}}
	return []tool.Tool{work, slow, ask}
}

var sessionScript = scripted.Script{Rounds: []scripted.Round{
	{Text: "Let me look.", Chunk: 4, Calls: []scripted.Call{{ID: "w1", Name: "work"}}},
	{Calls: []scripted.Call{{ID: "s1", Name: "slow"}}, Expect: []scripted.Expect{{LastUser: &scripted.TextExpect{Contains: "focus on the tests"}}}},
	{Calls: []scripted.Call{{ID: "a1", Name: "ask_user"}}, Expect: []scripted.Expect{{LastUser: &scripted.TextExpect{Contains: "carry on"}}}},
	{Text: "Done: blue.", Expect: []scripted.Expect{{Result: &scripted.ResultExpect{Call: "a1", Contains: "blue"}}}},
}}

// TestSession runs start → deltas → steer → interrupt → resume → answer
// through a scripted client over each transport.
func TestSession(t *testing.T) {
	for _, tc := range []struct {
		name string
		dial func(t *testing.T, s *server.Server) func(t *testing.T) *client
	}{
		{"stdio", func(_ *testing.T, s *server.Server) func(t *testing.T) *client {
			return func(t *testing.T) *client { return stdioClient(t, s) }
		}},
		{"websocket", wsServer},
	} {
		t.Run(tc.name, func(t *testing.T) {
			release := make(chan struct{})
			b := newBackend(t, sessionTools(release)...)
			b.script("main", sessionScript)
			dial := tc.dial(t, b.server(t, server.Config{}))
			clients := runSession(t, dial, release)
			for _, c := range clients {
				if len(c.seen) == 0 {
					t.Error("a client saw no notifications")
				}
				checkNotifications(t, c.seen)
			}
		})
	}
}

func runSession(t *testing.T, dial func(t *testing.T) *client, release chan struct{}) []*client {
	c1 := dial(t)
	if e := c1.callErr(protocol.MethodThreadList, nil); e.Code != protocol.CodeNotInitialized {
		t.Errorf("a request before initialize: %+v", e)
	}
	c1.initialize()
	var th protocol.ThreadResult
	c1.call(protocol.MethodThreadStart, protocol.ThreadStartParams{Model: "script:main"}, &th)
	threadID := th.Thread.ID

	// start → deltas
	var started protocol.TurnStartResult
	c1.call(protocol.MethodTurnStart, protocol.TurnStartParams{ThreadID: threadID, Input: text("look at the repo")}, &started)
	turn := started.Turn
	if turn.ID == "" || turn.Status != "inProgress" {
		t.Fatalf("turn/start: %+v", turn)
	}
	var streamed strings.Builder
	var streamID string
	var item protocol.ItemNotification
	var delta protocol.ItemDelta
	for {
		m := c1.read()
		switch m.Method {
		case protocol.NotifyItemStarted:
			decode(t, m, &item)
			if item.Item.Type == protocol.ItemAgentMessage && streamID == "" {
				streamID = item.Item.ID
			}
		case protocol.NotifyItemDelta:
			decode(t, m, &delta)
			if delta.ItemID != streamID {
				t.Errorf("a delta of item %q before its item/started (%q)", delta.ItemID, streamID)
			}
			if delta.Kind == protocol.DeltaText {
				streamed.WriteString(delta.Delta)
			}
		case protocol.NotifyItemCompleted:
			decode(t, m, &item)
			if item.Item.Type == protocol.ItemAgentMessage && (item.Item.StreamID != streamID || item.Item.Text != "Let me look.") {
				t.Errorf("item/completed %+v, want the streamed message (%s)", item.Item, streamID)
			}
		}
		if m.Method == protocol.NotifyItemStarted && item.Item.Type == protocol.ItemToolResult {
			break // the work tool runs
		}
	}
	if streamed.String() != "Let me look." {
		t.Errorf("text deltas %q", streamed.String())
	}

	// steer, while the round's tool runs
	if e := c1.callErr(protocol.MethodTurnSteer, protocol.TurnSteerParams{ThreadID: threadID, ExpectedTurnID: "turn_other", Input: text("x")}); e.Code != protocol.CodeTurnMismatch || e.Data.ActiveTurnID != turn.ID {
		t.Errorf("steer with the wrong turn id: %+v", e)
	}
	var steered protocol.TurnSteerResult
	c1.call(protocol.MethodTurnSteer, protocol.TurnSteerParams{ThreadID: threadID, ExpectedTurnID: turn.ID, Input: text("focus on the tests")}, &steered)
	if steered.TurnID != turn.ID || steered.ItemID == "" {
		t.Fatalf("turn/steer: %+v", steered)
	}
	close(release)

	// interrupt, while the slow tool runs
	c1.until(protocol.NotifyItemStarted, &item, func() bool { return item.Item.Result != nil && item.Item.Result.CallID == "s1" })
	c1.call(protocol.MethodTurnInterrupt, protocol.TurnInterruptParams{ThreadID: threadID, TurnID: turn.ID}, nil)
	var done protocol.TurnNotification
	c1.until(protocol.NotifyTurnCompleted, &done, nil)
	if done.Turn.ID != turn.ID || done.Turn.Status != "interrupted" || done.Turn.StopReason != string(loop.StopCancelled) {
		t.Fatalf("turn/completed %+v", done.Turn)
	}
	if e := c1.callErr(protocol.MethodTurnSteer, protocol.TurnSteerParams{ThreadID: threadID, ExpectedTurnID: turn.ID, Input: text("late")}); e.Code != protocol.CodeNoActiveTurn {
		t.Errorf("steer after the end: %+v", e)
	}

	// resume on a second connection; both watch the thread from now on
	c2 := dial(t)
	c2.initialize()
	c2.call(protocol.MethodThreadResume, protocol.ThreadResumeParams{ThreadID: threadID}, &th)
	var read protocol.ThreadReadResult
	c2.call(protocol.MethodThreadRead, protocol.ThreadReadParams{ThreadID: threadID}, &read)
	if len(read.Turns) != 1 || read.Turns[0].Status != "interrupted" {
		t.Errorf("thread/read turns %+v", read.Turns)
	}
	var steerItem, aborted, marker bool
	for _, it := range read.Items {
		steerItem = steerItem || (it.ID == steered.ItemID && it.Origin == "steer")
		aborted = aborted || (it.Result != nil && it.Result.CallID == "s1" && it.Result.Status == "aborted" && strings.Contains(it.Result.Content, "line 2"))
		marker = marker || it.Origin == "marker"
	}
	if !steerItem || !aborted || !marker {
		t.Errorf("thread/read items: steered item %v, aborted result with partial output %v, marker %v", steerItem, aborted, marker)
	}

	// answer
	var second protocol.TurnStartResult
	c2.call(protocol.MethodTurnStart, protocol.TurnStartParams{ThreadID: threadID, Input: text("carry on")}, &second)
	var pause protocol.PauseRequested
	for _, c := range []*client{c1, c2} {
		c.until(protocol.NotifyPauseRequested, &pause, nil)
		if pause.TurnID != second.Turn.ID || pause.CallID != "a1" || len(pause.Questions) != 1 || pause.Questions[0].ID != "q1" {
			t.Fatalf("pause/requested %+v", pause)
		}
	}
	if e := c2.callErr(protocol.MethodPauseAnswer, protocol.PauseAnswerParams{ThreadID: threadID, TurnID: second.Turn.ID, CallID: "zz", Text: "blue"}); e.Code != protocol.CodePauseMismatch {
		t.Errorf("an answer for another call: %+v", e)
	}
	c2.call(protocol.MethodPauseAnswer, protocol.PauseAnswerParams{ThreadID: threadID, TurnID: second.Turn.ID, CallID: "a1",
		Answers: []protocol.QuestionAnswer{{QuestionID: "q1", Text: "blue"}}}, nil)
	for _, c := range []*client{c1, c2} {
		c.until(protocol.NotifyTurnCompleted, &done, func() bool { return done.Turn.Status != "paused" })
		if done.Turn.ID != second.Turn.ID || done.Turn.Status != "completed" || done.Turn.Answer != "Done: blue." {
			t.Errorf("turn/completed %+v", done.Turn)
		}
	}
	return []*client{c1, c2}
}

func TestATokenIsRequiredBeyondLoopback(t *testing.T) {
	for _, tc := range []struct {
		addr, token string
		ok          bool
	}{
		{"127.0.0.1:0", "", true},
		{"[::1]:0", "", true},
		{"localhost:0", "", true},
		{"0.0.0.0:0", "", false},
		{":8080", "", false},
		{"192.0.2.1:80", "", false},
		{"0.0.0.0:0", "secret", true},
	} {
		err := server.CheckListen(tc.addr, tc.token)
		if (err == nil) != tc.ok {
			t.Errorf("CheckListen(%q, %q) = %v", tc.addr, tc.token, err)
		}
	}

	b := newBackend(t)
	s := b.server(t, server.Config{})
	listened := false
	err := s.ListenAndServe(t.Context(), "0.0.0.0:0", "", func(net.Addr) { listened = true })
	if !errors.Is(err, server.ErrTokenRequired) || listened {
		t.Errorf("ListenAndServe beyond loopback without a token: %v (listened %v)", err, listened)
	}

	// With a token, a client without it is refused and one with it served.
	hs := httptest.NewServer(s.Handler("secret"))
	defer hs.Close()
	url := "ws" + strings.TrimPrefix(hs.URL, "http")
	if _, resp, err := websocket.Dial(t.Context(), url, nil); err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a client without the token: %v", err)
	}
	bad := &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer wrong"}}}
	if _, _, err := websocket.Dial(t.Context(), url, bad); err == nil {
		t.Error("a client with a wrong token was served")
	}
	good := &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer secret"}}}
	c, _, err := websocket.Dial(t.Context(), url, good)
	if err != nil {
		t.Fatal(err)
	}
	w := wsWire{c}
	(&client{t: t, w: w}).initialize()
	w.close()
}

func TestListenAndServeOnLoopback(t *testing.T) {
	b := newBackend(t)
	s := b.server(t, server.Config{})
	ctx, cancel := context.WithCancel(t.Context())
	addrc := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() { done <- s.ListenAndServe(ctx, "127.0.0.1:0", "", func(a net.Addr) { addrc <- a }) }()
	addr := <-addrc
	c, _, err := websocket.Dial(t.Context(), "ws://"+addr.String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	w := wsWire{c}
	(&client{t: t, w: w}).initialize()
	w.close()
	cancel()
	if err := <-done; err != nil {
		t.Errorf("ListenAndServe: %v", err)
	}
}

// decode decodes a notification's params.
func decode(t *testing.T, m msg, out any) {
	t.Helper()
	if err := json.Unmarshal(m.Params, out); err != nil {
		t.Fatalf("%s params %s: %v", m.Method, m.Params, err)
	}
}
