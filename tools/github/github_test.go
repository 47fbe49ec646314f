package github

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reinhq/rein/tool"
)

const token = "ghp_testTOKEN0123456789abcdefABCDEF0123"

// Answers in the shape GitHub's REST API gives them (fields trimmed to
// those the tool reads, plus a few it ignores).
const (
	issueBody = `{
 "number": 42, "title": "Crash when the config is empty", "state": "open", "state_reason": null,
 "user": {"login": "octocat", "id": 1}, "labels": [{"name": "bug"}, {"name": "help wanted"}],
 "assignees": [{"login": "hubot"}], "comments": 3,
 "body": "Steps:\r\n1. empty config\r\n2. run",
 "html_url": "https://github.com/acme/widget/issues/42",
 "created_at": "2024-03-01T10:00:00Z", "updated_at": "2024-03-02T11:00:00Z", "closed_at": null,
 "reactions": {"total_count": 2}
}`
	pullBody = `{
 "number": 7, "title": "Add retries", "state": "closed", "draft": false, "merged": true,
 "merged_at": "2024-04-05T09:00:00Z", "mergeable_state": "unknown",
 "user": {"login": "dev1"}, "labels": [{"name": "enhancement"}],
 "additions": 120, "deletions": 30, "changed_files": 2, "commits": 3,
 "base": {"ref": "main", "label": "acme:main"}, "head": {"ref": "retries", "label": "dev1:retries"},
 "body": "Adds retries with backoff.", "html_url": "https://github.com/acme/widget/pull/7",
 "created_at": "2024-04-01T09:00:00Z", "updated_at": "2024-04-05T09:00:00Z"
}`
	filesBody = `[
 {"sha": "aaa", "filename": "retry.go", "status": "added", "additions": 100, "deletions": 0, "changes": 100},
 {"sha": "bbb", "filename": "client.go", "status": "modified", "additions": 20, "deletions": 30, "changes": 50}
]`
	runBody = `{
 "id": 9001, "name": "CI", "display_title": "Add retries", "run_number": 77, "run_attempt": 2,
 "status": "completed", "conclusion": "failure", "event": "pull_request", "head_branch": "retries",
 "head_sha": "0123456789abcdef0123456789abcdef01234567",
 "html_url": "https://github.com/acme/widget/actions/runs/9001",
 "created_at": "2024-04-02T08:00:00Z", "updated_at": "2024-04-02T08:10:00Z"
}`
	jobsBody = `{"total_count": 3, "jobs": [
 {"id": 1, "name": "lint", "status": "completed", "conclusion": "success", "steps": [{"name": "vet", "conclusion": "success"}]},
 {"id": 2, "name": "test (linux)", "status": "completed", "conclusion": "failure",
  "html_url": "https://github.com/acme/widget/actions/runs/9001/job/2",
  "steps": [{"name": "Set up job", "conclusion": "success"}, {"name": "Run tests", "conclusion": "failure"}, {"name": "Upload", "conclusion": "skipped"}]},
 {"id": 3, "name": "test (windows)", "status": "completed", "conclusion": "timed_out", "steps": []}
]}`
	runsBody = `{"total_count": 250, "workflow_runs": [
 {"id": 9001, "name": "CI", "status": "completed", "conclusion": "failure", "head_branch": "retries", "event": "pull_request", "created_at": "2024-04-02T08:00:00Z"},
 {"id": 9000, "name": "CI", "status": "in_progress", "conclusion": null, "head_branch": "main", "event": "push", "created_at": "2024-04-01T08:00:00Z"}
]}`
	repoBody = `{
 "full_name": "acme/widget", "description": "Widgets for everyone", "html_url": "https://github.com/acme/widget",
 "homepage": "https://widget.example", "stargazers_count": 1234, "forks_count": 56, "open_issues_count": 7,
 "language": "Go", "default_branch": "main", "visibility": "public", "private": false, "archived": false,
 "fork": false, "topics": ["go", "widgets"], "pushed_at": "2024-04-05T09:00:00Z",
 "license": {"key": "mit", "spdx_id": "MIT"}
}`
)

// fakeGitHub serves the answers above under prefix and records the
// requests it gets.
type fakeGitHub struct {
	mu   sync.Mutex
	reqs []*http.Request
}

func (f *fakeGitHub) handler(prefix string) http.Handler {
	routes := map[string]string{
		"/repos/acme/widget/issues/42":              issueBody,
		"/repos/acme/widget/pulls/7":                pullBody,
		"/repos/acme/widget/pulls/7/files":          filesBody,
		"/repos/acme/widget/actions/runs/9001":      runBody,
		"/repos/acme/widget/actions/runs/9001/jobs": jobsBody,
		"/repos/acme/widget/actions/runs":           runsBody,
		"/repos/acme/widget":                        repoBody,
		"/repos/acme/widget/commits":                `[{"sha":"abc","commit":{"message":"fix"}}]`,
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.reqs = append(f.reqs, r)
		f.mu.Unlock()
		body, ok := routes[strings.TrimPrefix(r.URL.Path, prefix)]
		if !ok || !strings.HasPrefix(r.URL.Path, prefix) {
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, `{"message":"Not Found","documentation_url":"https://docs.github.com/rest"}`)
			return
		}
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		fmt.Fprint(w, body)
	})
}

func (f *fakeGitHub) requests() []*http.Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*http.Request(nil), f.reqs...)
}

func newTool(t *testing.T, cfg Config) tool.Tool {
	t.Helper()
	gt, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return gt
}

func call(t *testing.T, gt tool.Tool, queryType, target string) (string, error) {
	t.Helper()
	args, _ := json.Marshal(map[string]string{"query_type": queryType, "target": target})
	out, err := gt.Run(context.Background(), tool.Call{Name: Name, Args: args})
	return out.Text, err
}

func TestQueriesGiveCompactText(t *testing.T) {
	for _, prefix := range []string{"", "/api/v3"} {
		fake := &fakeGitHub{}
		srv := httptest.NewServer(fake.handler(prefix))
		defer srv.Close()
		gt := newTool(t, Config{Token: token, BaseURL: srv.URL + prefix + "/"})
		for _, tc := range []struct {
			queryType, target string
			want              []string
		}{
			{"issue", "acme/widget#42", []string{
				"acme/widget#42: Crash when the config is empty\n",
				"state: open · author: octocat · labels: bug, help wanted · assignees: hubot · comments: 3\n",
				"created 2024-03-01, updated 2024-03-02\n",
				"https://github.com/acme/widget/issues/42\n",
				"\nSteps:\n1. empty config\n2. run\n",
			}},
			{"issue", "https://github.com/acme/widget/issues/42", []string{"acme/widget#42: Crash"}},
			{"pr", "acme/widget#7", []string{
				"acme/widget#7 (pull request): Add retries\n",
				"state: merged · author: dev1 · base main ← dev1:retries · labels: enhancement\n",
				"changes: +120 −30 in 2 files, 3 commits\n",
				"files:\n  retry.go  +100 −0 (added)\n  client.go  +20 −30 (modified)\n",
				"Adds retries with backoff.",
			}},
			{"pr", "github.com/acme/widget/pull/7/files", []string{"(pull request): Add retries"}},
			{"run", "acme/widget#9001", []string{
				"acme/widget run 9001: CI (#77, attempt 2)\n",
				"status: completed · conclusion: failure · event: pull_request · branch: retries · commit 0123456\n",
				"failing jobs (2 of 3):\n",
				`  - test (linux) (failure): failed step "Run tests"` + "\n    https://github.com/acme/widget/actions/runs/9001/job/2\n",
				"  - test (windows) (timed_out)\n",
			}},
			{"run", "https://github.com/acme/widget/actions/runs/9001/job/2", []string{"run 9001: CI"}},
			{"run", "acme/widget", []string{
				"acme/widget: the 2 most recent workflow runs of 250",
				"  9001  CI  failure · retries · pull_request · 2024-04-02\n",
				"  9000  CI  in_progress · main · push · 2024-04-01\n",
			}},
			{"repo", "acme/widget", []string{
				"acme/widget: Widgets for everyone\n",
				"stars 1234 · forks 56 · open issues and PRs 7 · language Go · license MIT · default branch main\n",
				"public · last push 2024-04-05\n",
				"topics: go, widgets\n",
			}},
			{"api", "/repos/acme/widget/commits?per_page=1", []string{"\"sha\": \"abc\"", "\"message\": \"fix\""}},
		} {
			text, err := call(t, gt, tc.queryType, tc.target)
			if err != nil {
				t.Errorf("%s %s (prefix %q): %v", tc.queryType, tc.target, prefix, err)
				continue
			}
			for _, w := range tc.want {
				if !strings.Contains(text, w) {
					t.Errorf("%s %s (prefix %q): output lacks %q:\n%s", tc.queryType, tc.target, prefix, w, text)
				}
			}
		}
		reqs := fake.requests()
		if len(reqs) == 0 {
			t.Fatal("no requests")
		}
		for _, r := range reqs {
			if r.Method != http.MethodGet || r.Header.Get("Authorization") != "Bearer "+token ||
				r.Header.Get("Accept") != "application/vnd.github+json" || r.Header.Get("X-GitHub-Api-Version") == "" {
				t.Errorf("%s %s: headers %v", r.Method, r.URL, r.Header)
			}
			if !strings.HasPrefix(r.URL.Path, prefix+"/repos/") {
				t.Errorf("request outside the base path: %s", r.URL.Path)
			}
		}
		var last = reqs[len(reqs)-1]
		if last.URL.RawQuery != "per_page=1" {
			t.Errorf("the api query string was not kept: %q", last.URL.RawQuery)
		}
	}
}

func TestWithoutTokenNoAuthorizationIsSent(t *testing.T) {
	fake := &fakeGitHub{}
	srv := httptest.NewServer(fake.handler(""))
	defer srv.Close()
	if _, err := call(t, newTool(t, Config{BaseURL: srv.URL}), "repo", "acme/widget"); err != nil {
		t.Fatal(err)
	}
	if h := fake.requests()[0].Header.Get("Authorization"); h != "" {
		t.Errorf("Authorization %q", h)
	}
}

func TestBadTargetsAreRefusedBeforeAnyRequest(t *testing.T) {
	fake := &fakeGitHub{}
	srv := httptest.NewServer(fake.handler(""))
	defer srv.Close()
	gt := newTool(t, Config{Token: token, BaseURL: srv.URL})
	for _, tc := range []struct{ queryType, target, want string }{
		{"issue", "acme/widget", "want OWNER/REPO#NUMBER"},
		{"issue", "acme#1", "want OWNER/REPO#NUMBER"},
		{"issue", "acme/widget#x", "want OWNER/REPO#NUMBER"},
		{"issue", "acme/widget#-1", "want OWNER/REPO#NUMBER"},
		{"issue", "../../etc/passwd#1", "want OWNER/REPO#NUMBER"},
		{"pr", "acme/widget/tree/main", "want OWNER/REPO#NUMBER"},
		{"repo", "acme/widget#3", "want OWNER/REPO"},
		{"repo", "acme/wid get", "want OWNER/REPO"},
		{"repo", "acme/..", "want OWNER/REPO"},
		{"api", "https://evil.example/steal", "not a path"},
		{"api", "//evil.example/steal", "not a path"},
		{"api", "http://" + strings.TrimPrefix(srv.URL, "http://") + "/repos/acme/widget", "not a path"},
		{"api", "repos/acme/widget", "must start with /"},
		{"api", "/repos/../../admin", "must not contain . or .."},
		{"api", "/repos/%2e%2e/admin", "must not contain . or .."},
		{"search", "x", `query_type "search": use one of issue, pr, run, repo, api`},
	} {
		_, err := call(t, gt, tc.queryType, tc.target)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %q: err %v, want %q", tc.queryType, tc.target, err, tc.want)
		}
	}
	if n := len(fake.requests()); n != 0 {
		t.Errorf("%d requests made for refused targets", n)
	}
}

func TestErrorsFromStatusCodesAreActionableAndNeverHoldTheToken(t *testing.T) {
	reset := time.Date(2030, 1, 2, 15, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		name    string
		token   string
		status  int
		header  map[string]string
		want    []string
		limited bool
	}{
		{"bad token", token, 401, nil, []string{"401", "GITHUB_TOKEN is wrong, expired or revoked"}, false},
		{"no token", "", 401, nil, []string{"401", "set GITHUB_TOKEN"}, false},
		{"rate limit", token, 403, map[string]string{"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": fmt.Sprint(reset.Unix())},
			[]string{"403", "rate limit is exceeded", "resets at 15:04:05 UTC (in 1h0m0s)"}, true},
		{"secondary rate limit", token, 429, map[string]string{"Retry-After": "60"}, []string{"429", "rate limit", "(in 1m0s)"}, true},
		{"forbidden", token, 403, nil, []string{"403", "lacks the permission"}, false},
		{"not found", token, 404, nil, []string{"404", "does not exist, or it is private and the token cannot see it"}, false},
		{"not found without token", "", 404, nil, []string{"no GITHUB_TOKEN is set"}, false},
		{"server error", token, 502, nil, []string{"502", "try again later"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				for k, v := range tc.header {
					w.Header().Set(k, v)
				}
				w.WriteHeader(tc.status)
				// A hostile or buggy server echoing the credentials back.
				fmt.Fprintf(w, `{"message": "nope for %s"}`, r.Header.Get("Authorization"))
			}))
			defer srv.Close()
			c, err := newClient(Config{Token: tc.token, BaseURL: srv.URL})
			if err != nil {
				t.Fatal(err)
			}
			c.now = func() time.Time { return reset.Add(-time.Hour) }
			_, err = c.run(context.Background(), input{QueryType: "repo", Target: "acme/widget"})
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if tc.token != "" && strings.Contains(err.Error(), tc.token) {
				t.Errorf("the token is in the error: %q", err)
			}
			var ae *APIError
			if !errors.As(err, &ae) || ae.Status != tc.status || ae.RateLimited != tc.limited {
				t.Errorf("err %#v", err)
			}
		})
	}
}

func TestTokenNeverAppearsInResults(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		auth := r.Header.Get("Authorization")
		fmt.Fprintf(w, `{"full_name": "acme/widget", "description": "echo %s", "default_branch": "main", "topics": [%q]}`, auth, auth)
	}))
	defer srv.Close()
	gt := newTool(t, Config{Token: token, BaseURL: srv.URL})
	for _, q := range []struct{ queryType, target string }{{"repo", "acme/widget"}, {"api", "/repos/acme/widget"}} {
		text, err := call(t, gt, q.queryType, q.target)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(text, token) || !strings.Contains(text, "[redacted]") {
			t.Errorf("%s: %s", q.queryType, text)
		}
	}
}

func TestRedirectsToAnotherHostAreNotFollowed(t *testing.T) {
	var leaked sync.Map
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		leaked.Store("hit", r.Header.Get("Authorization"))
		fmt.Fprint(w, `{}`)
	}))
	defer other.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+"/repos/acme/widget", http.StatusMovedPermanently)
	}))
	defer srv.Close()
	_, err := call(t, newTool(t, Config{Token: token, BaseURL: srv.URL}), "repo", "acme/widget")
	if err == nil || !strings.Contains(err.Error(), "refusing a redirect") {
		t.Errorf("err %v", err)
	}
	if _, hit := leaked.Load("hit"); hit {
		t.Error("the other host was reached")
	}
}

func TestNewRefusesBadBaseURLs(t *testing.T) {
	for _, u := range []string{"ftp://x", "not a url", "https://user:pw@api.github.com", "/relative"} {
		if _, err := New(Config{BaseURL: u}); err == nil {
			t.Errorf("%q accepted", u)
		}
	}
	gt, err := New(Config{})
	if err != nil || gt.Spec().Name != "github" || gt.Spec().Access != tool.ReadOnly {
		t.Errorf("default: %v %+v", err, gt)
	}
}

func TestLongBodiesAreTrimmed(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := json.Marshal(map[string]any{"number": 1, "title": "t", "state": "open", "body": strings.Repeat("ü", maxBodyChars+10)})
		w.Write(b)
	}))
	defer srv.Close()
	text, err := call(t, newTool(t, Config{BaseURL: srv.URL}), "issue", "a/b#1")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text, strings.Repeat("ü", maxBodyChars)+"\n[trimmed: 10 more characters]") {
		t.Errorf("not trimmed as expected: ...%s", text[len(text)-80:])
	}
}
