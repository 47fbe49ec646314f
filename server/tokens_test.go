package server_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/coder/websocket"

	"github.com/reinhq/rein/llm/scripted"
	"github.com/reinhq/rein/protocol"
	"github.com/reinhq/rein/server"
)

const (
	aliceToken = "alice-0123456789abcdef"
	bobToken   = "bob-0123456789abcdef"
)

// noTraces is a TraceReader that kept nothing.
type noTraces struct{}

func (noTraces) Trace(context.Context, string) ([]json.RawMessage, error) { return nil, nil }

// namedServer serves a server with the admin token "secret" and the named
// tokens of alice and bob; dial opens a connection with the given headers
// and subprotocols.
func namedServer(t *testing.T, b *backend) (base string, dial func(t *testing.T, h http.Header, protos ...string) *client) {
	t.Helper()
	return namedServerOf(t, b.server(t, server.Config{Traces: noTraces{}, NamedTokens: []server.NamedToken{{Name: "alice", Token: aliceToken}, {Name: "bob", Token: bobToken}}}))
}

// namedServerOf serves s with the admin token "secret".
func namedServerOf(t *testing.T, s *server.Server) (base string, dial func(t *testing.T, h http.Header, protos ...string) *client) {
	t.Helper()
	hs := httptest.NewServer(s.Handler("secret"))
	t.Cleanup(hs.Close)
	ws := "ws" + strings.TrimPrefix(hs.URL, "http")
	return hs.URL, func(t *testing.T, h http.Header, protos ...string) *client {
		t.Helper()
		conn, _, err := websocket.Dial(t.Context(), ws, &websocket.DialOptions{HTTPHeader: h, Subprotocols: protos})
		if err != nil {
			t.Fatalf("dial: %v", err)
		}
		w := wsWire{conn}
		t.Cleanup(w.close)
		c := &client{t: t, w: w}
		c.initialize()
		return c
	}
}

func bearer(tok string) http.Header { return http.Header{"Authorization": {"Bearer " + tok}} }

func listIDs(c *client, query string) []string {
	c.t.Helper()
	var res protocol.ThreadListResult
	c.call(protocol.MethodThreadList, protocol.ThreadListParams{Query: query}, &res)
	var ids []string
	for _, th := range res.Threads {
		ids = append(ids, th.ID)
	}
	return ids
}

func TestANamedTokenSeesOnlyTheThreadsItCreated(t *testing.T) {
	b := newBackend(t)
	b.script("alice", scripted.Script{Rounds: []scripted.Round{{Text: "alice's answer"}}})
	b.script("bob", scripted.Script{})
	_, dial := namedServer(t, b)
	alice := dial(t, bearer(aliceToken))
	bob := dial(t, nil, server.Subprotocol, server.BearerSubprotocolPrefix+base64.RawURLEncoding.EncodeToString([]byte(bobToken)))
	admin := dial(t, bearer("secret"))

	var ath, bth, mth protocol.ThreadResult
	alice.call(protocol.MethodThreadStart, protocol.ThreadStartParams{Model: "script:alice"}, &ath)
	bob.call(protocol.MethodThreadStart, protocol.ThreadStartParams{Model: "script:bob"}, &bth)
	admin.call(protocol.MethodThreadStart, protocol.ThreadStartParams{Model: "script:bob"}, &mth)
	if ath.Thread.Owner != "alice" || bth.Thread.Owner != "bob" || mth.Thread.Owner != "" {
		t.Fatalf("owners %q %q %q, want alice, bob and none", ath.Thread.Owner, bth.Thread.Owner, mth.Thread.Owner)
	}
	var started protocol.TurnStartResult
	alice.call(protocol.MethodTurnStart, protocol.TurnStartParams{ThreadID: ath.Thread.ID, Input: text("alice's secret plan")}, &started)
	var done protocol.TurnNotification
	alice.until(protocol.NotifyTurnCompleted, &done, nil)

	if got := listIDs(alice, ""); !slices.Equal(got, []string{ath.Thread.ID}) {
		t.Errorf("alice lists %v, want only her thread %s", got, ath.Thread.ID)
	}
	if got := listIDs(bob, ""); !slices.Equal(got, []string{bth.Thread.ID}) {
		t.Errorf("bob lists %v, want only his thread %s", got, bth.Thread.ID)
	}
	if got := listIDs(bob, "secret plan"); len(got) != 0 {
		t.Errorf("bob's search for alice's words found %v", got)
	}
	if got := listIDs(admin, ""); len(got) != 3 {
		t.Errorf("the admin lists %v, want all three threads", got)
	}

	// Every method naming alice's thread answers bob as for a thread that
	// does not exist, message included.
	a, missing := ath.Thread.ID, "thread_doesnotexist00"
	for _, tc := range []struct {
		method string
		params func(id string) any
	}{
		{protocol.MethodThreadRead, func(id string) any { return protocol.ThreadReadParams{ThreadID: id} }},
		{protocol.MethodThreadResume, func(id string) any { return protocol.ThreadResumeParams{ThreadID: id} }},
		{protocol.MethodTurnStart, func(id string) any { return protocol.TurnStartParams{ThreadID: id, Input: text("hijack")} }},
		{protocol.MethodTurnSteer, func(id string) any {
			return protocol.TurnSteerParams{ThreadID: id, ExpectedTurnID: started.Turn.ID, Input: text("hijack")}
		}},
		{protocol.MethodTurnInterrupt, func(id string) any { return protocol.TurnInterruptParams{ThreadID: id, TurnID: started.Turn.ID} }},
		{protocol.MethodThreadCompact, func(id string) any { return protocol.ThreadCompactParams{ThreadID: id} }},
		{protocol.MethodPauseAnswer, func(id string) any {
			return protocol.PauseAnswerParams{ThreadID: id, TurnID: started.Turn.ID, CallID: "c1", Text: "x"}
		}},
		{protocol.MethodApprovalAnswer, func(id string) any {
			return protocol.ApprovalAnswerParams{ThreadID: id, TurnID: started.Turn.ID, CallID: "c1", Decision: protocol.DecisionApprove}
		}},
		{protocol.MethodTurnTrace, func(id string) any { return protocol.TurnTraceParams{ThreadID: id, TurnID: started.Turn.ID} }},
	} {
		got := bob.callErr(tc.method, tc.params(a))
		want := bob.callErr(tc.method, tc.params(missing))
		if got.Code != protocol.CodeThreadNotFound || got.Data == nil || got.Data.Kind != "threadNotFound" {
			t.Errorf("bob's %s on alice's thread: %+v, want threadNotFound", tc.method, got)
			continue
		}
		if strings.ReplaceAll(got.Message, a, missing) != want.Message || got.Code != want.Code {
			t.Errorf("bob's %s: alice's thread answers %q, a missing one %q: they must not differ", tc.method, got.Message, want.Message)
		}
	}
	// Nothing of alice's thread reached bob's connection.
	for _, m := range bob.seen {
		if strings.Contains(string(m.Params), a) || strings.Contains(string(m.Params), "secret plan") {
			t.Errorf("bob received %s about alice's thread: %s", m.Method, m.Params)
		}
	}
	// The turn was not touched: alice's thread still has one completed turn.
	var read protocol.ThreadReadResult
	alice.call(protocol.MethodThreadRead, protocol.ThreadReadParams{ThreadID: a}, &read)
	if len(read.Turns) != 1 || read.Turns[0].Status != "completed" {
		t.Errorf("alice's thread after bob's tries: %+v", read.Turns)
	}
	// The admin sees and reads every thread.
	admin.call(protocol.MethodThreadRead, protocol.ThreadReadParams{ThreadID: a}, &read)
	if read.Thread.Owner != "alice" {
		t.Errorf("the admin reads alice's thread with owner %q", read.Thread.Owner)
	}
}

func TestSigningInWithANamedTokenSignsInItsOwner(t *testing.T) {
	b := newBackend(t)
	b.script("bob", scripted.Script{})
	base, dial := namedServer(t, b)
	alice := dial(t, bearer(aliceToken))
	var ath protocol.ThreadResult
	alice.call(protocol.MethodThreadStart, protocol.ThreadStartParams{Model: "script:bob"}, &ath)

	jar, _ := cookiejar.New(nil)
	resp, err := noRedirect(jar).PostForm(base+"/signin", url.Values{"token": {bobToken}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("POST /signin with bob's token: %d, want 303", resp.StatusCode)
	}
	cookies := jar.Cookies(mustURL(t, base))
	if len(cookies) != 1 {
		t.Fatalf("cookies after sign-in: %v", cookies)
	}
	bob := dial(t, http.Header{"Cookie": {cookies[0].String()}})
	if got := listIDs(bob, ""); len(got) != 0 {
		t.Errorf("bob's browser session lists %v, want none of alice's", got)
	}
	if e := bob.callErr(protocol.MethodThreadRead, protocol.ThreadReadParams{ThreadID: ath.Thread.ID}); e.Code != protocol.CodeThreadNotFound {
		t.Errorf("bob's browser session reads alice's thread: %+v", e)
	}
	var bth protocol.ThreadResult
	bob.call(protocol.MethodThreadStart, protocol.ThreadStartParams{Model: "script:bob"}, &bth)
	if bth.Thread.Owner != "bob" {
		t.Errorf("a thread bob's browser started has owner %q", bth.Thread.Owner)
	}
}

func TestNamedTokensNeedCredentialsEvenOnLoopback(t *testing.T) {
	b := newBackend(t)
	s := b.server(t, server.Config{NamedTokens: []server.NamedToken{{Name: "alice", Token: aliceToken}}})
	hs := httptest.NewServer(s.Handler(""))
	defer hs.Close()
	ws := "ws" + strings.TrimPrefix(hs.URL, "http")
	if _, resp, err := websocket.Dial(t.Context(), ws, nil); err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("no credentials on a server with named tokens: %v, want 401", err)
	}
	for _, tok := range []string{"", "secret", bobToken} {
		if _, resp, err := websocket.Dial(t.Context(), ws, &websocket.DialOptions{HTTPHeader: bearer(tok)}); err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("token %q on a server with only alice's: %v, want 401", tok, err)
		}
	}
	conn, _, err := websocket.Dial(t.Context(), ws, &websocket.DialOptions{HTTPHeader: bearer(aliceToken)})
	if err != nil {
		t.Fatalf("alice's token: %v", err)
	}
	conn.Close(websocket.StatusNormalClosure, "")
}

func TestReadNamedTokensChecksTheFile(t *testing.T) {
	for _, tc := range []struct {
		name, file, wantErr string
		want                []server.NamedToken
	}{
		{"two tokens, comments and blanks", "# team\nalice=" + aliceToken + "\n\n bob = " + bobToken + " \n", "",
			[]server.NamedToken{{Name: "alice", Token: aliceToken}, {Name: "bob", Token: bobToken}}},
		{"no equals sign", "alice " + aliceToken + "\n", "line 1 is not NAME=TOKEN", nil},
		{"a bad name", "al ice=" + aliceToken + "\n", "is not 1 to 64", nil},
		{"a name twice", "alice=" + aliceToken + "\nalice=" + bobToken + "\n", "given twice", nil},
		{"a short token", "alice=short\n", "must be 16", nil},
		{"a shared token", "alice=" + aliceToken + "\nbob=" + aliceToken + "\n", "also another token's", nil},
		{"the admin's token", "alice=admin-token-0123456789\n", "also another token's", nil},
	} {
		got, err := server.ReadNamedTokens(strings.NewReader(tc.file), "admin-token-0123456789")
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s: err %v, want one saying %q", tc.name, err, tc.wantErr)
			}
			if err != nil && (strings.Contains(err.Error(), aliceToken) || strings.Contains(err.Error(), bobToken) || strings.Contains(err.Error(), "short")) {
				t.Errorf("%s: the error shows a token: %v", tc.name, err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %v, %v; want %v", tc.name, got, err, tc.want)
		}
	}
	if _, err := server.ReadNamedTokens(strings.NewReader(strings.Repeat("#", 2<<20)), ""); err == nil {
		t.Error("a 2 MiB token file was read")
	}
}

func TestThreadListQueryFindsByTitle(t *testing.T) {
	b := newBackend(t)
	b.script("q", scripted.Script{Rounds: []scripted.Round{{Text: "ok"}, {Text: "ok"}}})
	c := stdioClient(t, b.server(t, server.Config{}))
	c.initialize()
	var ids []string
	for _, msg := range []string{"Fix the 100% PARSER", "write docs"} {
		var th protocol.ThreadResult
		c.call(protocol.MethodThreadStart, protocol.ThreadStartParams{Model: "script:q"}, &th)
		var started protocol.TurnStartResult
		c.call(protocol.MethodTurnStart, protocol.TurnStartParams{ThreadID: th.Thread.ID, Input: text(msg)}, &started)
		var done protocol.TurnNotification
		c.until(protocol.NotifyTurnCompleted, &done, func() bool { return done.Turn.ID == started.Turn.ID })
		ids = append(ids, th.Thread.ID)
	}
	for q, want := range map[string][]string{"parser": {ids[0]}, "0%": {ids[0]}, "DOCS": {ids[1]}, "%": {ids[0]}, "nothing": nil, "": {ids[1], ids[0]}} {
		if got := listIDs(c, q); !slices.Equal(got, want) {
			t.Errorf("thread/list query %q = %v, want %v", q, got, want)
		}
	}
	if e := c.callErr(protocol.MethodThreadList, protocol.ThreadListParams{Query: strings.Repeat("x", 321)}); e.Code != protocol.CodeInvalidParams {
		t.Errorf("a 321-byte query: %+v, want invalid params", e)
	}
}
