package server_test

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/coder/websocket"

	"github.com/reinhq/rein/llm/scripted"
	"github.com/reinhq/rein/protocol"
	"github.com/reinhq/rein/server"
)

// store is the knowledge bases of a server's store, which rein kb changes
// while the server runs.
type kbStore struct {
	mu    sync.Mutex
	names []string
}

func (s *kbStore) list(context.Context) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.names), nil
}

func (s *kbStore) set(names ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.names = names
}

func knowledgeList(c *client) []string {
	c.t.Helper()
	var res protocol.KnowledgeListResult
	c.call(protocol.MethodKnowledgeList, protocol.KnowledgeListParams{}, &res)
	return res.KnowledgeBases
}

// TestKnowledgeListFollowsTheStore: a base added to the store or removed
// from it while a client is connected is in, or out of, the next
// knowledge/list of that connection, without reconnecting; thread/start
// takes the new base and refuses the removed one.
func TestKnowledgeListFollowsTheStore(t *testing.T) {
	b := newBackend(t)
	st := &kbStore{names: []string{"docs"}}
	c := stdioClient(t, b.server(t, server.Config{KnowledgeBases: st.list}))
	c.initialize()
	if got := knowledgeList(c); !slices.Equal(got, []string{"docs"}) {
		t.Fatalf("knowledge/list = %v, want [docs]", got)
	}
	st.set("docs", "notes")
	if got := knowledgeList(c); !slices.Equal(got, []string{"docs", "notes"}) {
		t.Errorf("knowledge/list after rein kb add notes = %v, want [docs notes]", got)
	}
	var started protocol.ThreadResult
	c.call(protocol.MethodThreadStart, protocol.ThreadStartParams{Model: "script:kb", KnowledgeBases: []string{"notes"}}, &started)
	st.set("notes")
	if got := knowledgeList(c); !slices.Equal(got, []string{"notes"}) {
		t.Errorf("knowledge/list after rein kb remove docs = %v, want [notes]", got)
	}
	if e := c.callErr(protocol.MethodThreadStart, protocol.ThreadStartParams{Model: "script:kb", KnowledgeBases: []string{"docs"}}); e.Code != protocol.CodeInvalidParams {
		t.Errorf("thread/start with a removed base: %d %s, want -32602", e.Code, e.Message)
	}
	// A server without bases answers an empty list, not null.
	c2 := stdioClient(t, b.server(t, server.Config{}))
	c2.initialize()
	var raw map[string]any
	c2.call(protocol.MethodKnowledgeList, nil, &raw)
	if l, ok := raw["knowledgeBases"].([]any); !ok || len(l) != 0 {
		t.Errorf("knowledge/list without bases = %v, want knowledgeBases []", raw)
	}
}

// TestANamedTokenSeesOnlyItsGrantedKnowledgeBases: a token file's
// kb=BASE,… grants a named token those bases only. Initialize and
// knowledge/list list only those; another token's base is refused by
// thread/start exactly as a base that does not exist, naming only the
// token's own; a token without kb= and the admin see every base, one with
// kb= alone none.
func TestANamedTokenSeesOnlyItsGrantedKnowledgeBases(t *testing.T) {
	b := newBackend(t)
	st := &kbStore{names: []string{"alice-notes", "bob-notes", "shared"}}
	const carolToken, daveToken = "carol-0123456789abcdef", "dave-0123456789abcdef"
	tokens, err := server.ReadNamedTokens(strings.NewReader(
		"alice="+aliceToken+" kb=alice-notes,shared\nbob="+bobToken+" kb=bob-notes\ncarol="+carolToken+"\ndave="+daveToken+" kb=\n"), "secret")
	if err != nil {
		t.Fatal(err)
	}
	base, dial := namedServerOf(t, b.server(t, server.Config{KnowledgeBases: st.list, NamedTokens: tokens}))
	ws := "ws" + strings.TrimPrefix(base, "http")
	for _, tc := range []struct {
		who, token string
		want       []string
	}{
		{"alice", aliceToken, []string{"alice-notes", "shared"}},
		{"bob", bobToken, []string{"bob-notes"}},
		{"carol (no kb=)", carolToken, []string{"alice-notes", "bob-notes", "shared"}},
		{"dave (kb= alone)", daveToken, []string{}},
		{"the admin", "secret", []string{"alice-notes", "bob-notes", "shared"}},
	} {
		t.Run(tc.who, func(t *testing.T) {
			conn, _, err := websocket.Dial(t.Context(), ws, &websocket.DialOptions{HTTPHeader: bearer(tc.token)})
			if err != nil {
				t.Fatalf("dial: %v", err)
			}
			w := wsWire{conn}
			t.Cleanup(w.close)
			c := &client{t: t, w: w}
			var init protocol.InitializeResult
			c.call(protocol.MethodInitialize, protocol.InitializeParams{ClientInfo: protocol.ClientInfo{Name: "test"}}, &init)
			var got []string
			if init.Defaults != nil {
				got = init.Defaults.KnowledgeBases
			}
			if !slices.Equal(got, tc.want) && (len(got) != 0 || len(tc.want) != 0) {
				t.Errorf("initialize defaults.knowledgeBases = %v, want %v", got, tc.want)
			}
			if got := knowledgeList(c); !slices.Equal(got, tc.want) {
				t.Errorf("knowledge/list = %v, want %v", got, tc.want)
			}
		})
	}

	bob := dial(t, bearer(bobToken))
	other := bob.callErr(protocol.MethodThreadStart, protocol.ThreadStartParams{Model: "script:kb", KnowledgeBases: []string{"alice-notes"}})
	madeUp := bob.callErr(protocol.MethodThreadStart, protocol.ThreadStartParams{Model: "script:kb", KnowledgeBases: []string{"zzzzz-notes"}})
	if other.Code != protocol.CodeInvalidParams || madeUp.Code != other.Code {
		t.Fatalf("bob attaching alice's base: %d %q; a made-up one: %d %q; want both -32602", other.Code, other.Message, madeUp.Code, madeUp.Message)
	}
	if want := strings.ReplaceAll(madeUp.Message, "zzzzz-notes", "alice-notes"); other.Message != want || !reflect.DeepEqual(other.Data, madeUp.Data) {
		t.Errorf("bob attaching alice's base is told %q, a made-up base %q: want the same answer", other.Message, madeUp.Message)
	}
	if !strings.HasSuffix(other.Message, "known: bob-notes") {
		t.Errorf("bob's error names other bases than his: %q", other.Message)
	}
	var started protocol.ThreadResult
	bob.call(protocol.MethodThreadStart, protocol.ThreadStartParams{Model: "script:kb", KnowledgeBases: []string{"bob-notes"}}, &started)
	if !slices.Equal(started.Thread.KnowledgeBases, []string{"bob-notes"}) {
		t.Errorf("bob's thread attaches %v, want [bob-notes]", started.Thread.KnowledgeBases)
	}
}

func TestReadNamedTokensReadsKnowledgeBaseGrants(t *testing.T) {
	for _, tc := range []struct {
		name, line, wantErr string
		want                []string
	}{
		{"granted two", "alice=" + aliceToken + " kb=docs,notes", "", []string{"docs", "notes"}},
		{"granted none", "alice=" + aliceToken + "  kb=", "", []string{}},
		{"every base", "alice=" + aliceToken, "", nil},
		{"another field", "alice=" + aliceToken + " admin=yes", "only one kb=", nil},
		{"kb= twice", "alice=" + aliceToken + " kb=a kb=b", "only one kb=", nil},
		{"an empty name", "alice=" + aliceToken + " kb=a,,b", "knowledge base \"\"", nil},
	} {
		got, err := server.ReadNamedTokens(strings.NewReader(tc.line+"\n"), "")
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s: err %v, want one saying %q", tc.name, err, tc.wantErr)
			}
			if err != nil && strings.Contains(err.Error(), aliceToken) {
				t.Errorf("%s: the error shows the token: %v", tc.name, err)
			}
			continue
		}
		if err != nil || len(got) != 1 || got[0].Token != aliceToken || !reflect.DeepEqual(got[0].KnowledgeBases, tc.want) {
			t.Errorf("%s: %+v, %v; want the token granted %#v", tc.name, got, err, tc.want)
		}
	}
}

// A token whose grant was narrowed after it started a thread (the token
// file changed, the server restarted) cannot run the thread's turns on the
// base it lost.
func TestANarrowedGrantRefusesTheThreadsOlderBases(t *testing.T) {
	b := newBackend(t)
	b.script("kb", scripted.Script{})
	st := &kbStore{names: []string{"bob-notes", "shared"}}
	grant := func(line string) []server.NamedToken {
		tokens, err := server.ReadNamedTokens(strings.NewReader("bob="+bobToken+" "+line+"\n"), "secret")
		if err != nil {
			t.Fatal(err)
		}
		return tokens
	}
	_, dial := namedServerOf(t, b.server(t, server.Config{KnowledgeBases: st.list, NamedTokens: grant("kb=bob-notes,shared")}))
	var th protocol.ThreadResult
	dial(t, bearer(bobToken)).call(protocol.MethodThreadStart, protocol.ThreadStartParams{Model: "script:kb", KnowledgeBases: []string{"shared"}}, &th)

	_, dial = namedServerOf(t, b.server(t, server.Config{KnowledgeBases: st.list, NamedTokens: grant("kb=bob-notes")}))
	bob := dial(t, bearer(bobToken))
	e := bob.callErr(protocol.MethodTurnStart, protocol.TurnStartParams{ThreadID: th.Thread.ID, Input: text("hi")})
	if e.Code != protocol.CodeInvalidParams || !strings.Contains(e.Message, `"shared"`) {
		t.Fatalf("a turn on a base no longer granted: %d %q, want -32602 naming it", e.Code, e.Message)
	}
}
