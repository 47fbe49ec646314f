package server_test

import (
	"context"
	"encoding/json"
	"github.com/reinhq/rein/protocol"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/reinhq/rein/config"
	"github.com/reinhq/rein/loop"
	"github.com/reinhq/rein/provider"
	"github.com/reinhq/rein/server"
	"github.com/reinhq/rein/session"
)

// TestAClientMayNotNameAFileModel: thread/start {"model":"scripted:PATH"}
// made the server read PATH, and the script's parse error quoted it back
// (turn/completed, thread/read). A client names configured providers only;
// a file model is refused with -32602 saying why, and the file's contents
// appear in no message.
func TestAClientMayNotNameAFileModel(t *testing.T) {
	const secret = "S3CR3T-9d2b41"
	path := filepath.Join(t.TempDir(), "id_ed25519")
	key := "-----BEGIN OPENSSH PRIVATE KEY-----\n" + secret + "\n-----END OPENSSH PRIVATE KEY-----\n"
	if err := os.WriteFile(path, []byte(key), 0o600); err != nil {
		t.Fatal(err)
	}
	// The server resolves a thread's model as rein serve does.
	setup := func(_ context.Context, th session.Thread) (loop.Options, func(), error) {
		spec, err := provider.ParseSpec(th.Settings.Model)
		if err != nil {
			return loop.Options{}, nil, err
		}
		m, err := provider.Open(spec, provider.Config{File: &config.File{}})
		if err != nil {
			return loop.Options{}, nil, err
		}
		return loop.Options{Model: m}, nil, nil
	}
	sched, err := session.New(session.Config{Store: session.NewMemStore(), Setup: setup})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		sched.Close(ctx)
	}()
	s, err := server.New(server.Config{Sessions: sched})
	if err != nil {
		t.Fatal(err)
	}
	c := stdioClient(t, s)
	c.initialize()

	for _, model := range []string{"scripted:" + path, "Scripted:" + path, " scripted:" + path} {
		m := c.reply(c.send(protocol.MethodThreadStart, protocol.ThreadStartParams{Model: model}))
		raw, _ := json.Marshal(m)
		if strings.Contains(string(raw), secret) {
			t.Fatalf("thread/start %q answered with the file's contents: %s", model, raw)
		}
		if m.Error == nil || m.Error.Code != protocol.CodeInvalidParams || !strings.Contains(m.Error.Message, "reads a file") {
			// Accepted: the first turn reads the file; nothing it sends may
			// quote it either.
			var th protocol.ThreadResult
			json.Unmarshal(m.Result, &th)
			if th.Thread.ID != "" {
				var started protocol.TurnStartResult
				tm := c.reply(c.send(protocol.MethodTurnStart, protocol.TurnStartParams{ThreadID: th.Thread.ID, Input: text("hi")}))
				json.Unmarshal(tm.Result, &started)
				var done protocol.TurnNotification
				c.until(protocol.NotifyTurnCompleted, &done, func() bool { return done.Turn.ID == started.Turn.ID })
				rm := c.reply(c.send(protocol.MethodThreadRead, protocol.ThreadReadParams{ThreadID: th.Thread.ID}))
				for _, seen := range append(c.seen, rm) {
					if raw, _ := json.Marshal(seen); strings.Contains(string(raw), secret) {
						t.Errorf("the server sent the file's contents: %s", raw)
					}
				}
			}
			t.Fatalf("thread/start %q = %+v, want -32602 saying a client may not name a file", model, m.Error)
		}
	}
	// The server's own model (no model given) is still the client's to use.
	var th protocol.ThreadResult
	c.call(protocol.MethodThreadStart, protocol.ThreadStartParams{}, &th)
}
