// Package github is the github tool (DESIGN §7.3): read-only queries of
// GitHub's REST API — an issue, a pull request, a workflow run, a
// repository, or any GET path under the API — answered as compact text a
// model can read.
//
// The token (GITHUB_TOKEN) is sent as a bearer token to the configured
// base URL only: raw paths cannot name another host, redirects to another
// host are not followed, and the token is removed from every result and
// error.
package github

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/reinhq/rein/tool"
)

// Name is the tool's name.
const Name = "github"

// DefaultBaseURL is GitHub's public API.
const DefaultBaseURL = "https://api.github.com"

// Limits of what one answer shows.
const (
	maxBodyChars = 3000
	maxAPIChars  = 20_000
	maxFiles     = 30
)

// Config configures the tool.
type Config struct {
	// Token is sent as "Authorization: Bearer TOKEN"; empty sends none
	// (public data, lower rate limit).
	Token string
	// BaseURL is the API's URL (default https://api.github.com; for
	// GitHub Enterprise Server https://HOST/api/v3).
	BaseURL string
	// HTTPClient makes the requests (default: a client with a 30 s
	// timeout). Its redirect policy is replaced.
	HTTPClient *http.Client
}

// ConfigFromEnv reads GITHUB_TOKEN and GITHUB_API_URL (as GitHub Actions
// sets it).
func ConfigFromEnv() Config {
	return Config{Token: os.Getenv("GITHUB_TOKEN"), BaseURL: os.Getenv("GITHUB_API_URL")}
}

type input struct {
	QueryType string `json:"query_type" jsonschema:"one of: issue, pr, run, repo, api"`
	Target    string `json:"target" jsonschema:"issue and pr: OWNER/REPO#NUMBER or its github.com URL; run: OWNER/REPO#RUN_ID (or OWNER/REPO for recent runs); repo: OWNER/REPO; api: a GET path under the API such as /repos/OWNER/REPO/commits?per_page=5"`
}

// New returns the github tool, or an error when cfg.BaseURL is not an
// http(s) URL.
func New(cfg Config) (tool.Tool, error) {
	c, err := newClient(cfg)
	if err != nil {
		return nil, err
	}
	return tool.New(Name,
		"Read GitHub (read-only): an issue, a pull request with its changed files, a workflow run with its failing jobs, "+
			"a repository, or any GET path of the REST API.",
		func(ctx context.Context, in input) (tool.Output, error) { return c.run(ctx, in) },
		tool.WithAccess(tool.ReadOnly),
		tool.WithTimeout(60*time.Second)), nil
}

func (c *client) run(ctx context.Context, in input) (tool.Output, error) {
	var text string
	var err error
	switch q := strings.ToLower(strings.TrimSpace(in.QueryType)); q {
	case "issue":
		text, err = c.issue(ctx, in.Target)
	case "pr", "pull", "pull_request":
		text, err = c.pull(ctx, in.Target)
	case "run":
		text, err = c.workflowRun(ctx, in.Target)
	case "repo", "repository":
		text, err = c.repository(ctx, in.Target)
	case "api":
		text, err = c.api(ctx, in.Target)
	default:
		err = fmt.Errorf(`query_type %q: use one of issue, pr, run, repo, api`, in.QueryType)
	}
	if err != nil {
		return tool.Output{}, c.scrubErr(err)
	}
	return tool.Text(c.scrub(text)), nil
}

type user struct {
	Login string `json:"login"`
}

type label struct {
	Name string `json:"name"`
}

type issueJSON struct {
	Number      int64           `json:"number"`
	Title       string          `json:"title"`
	State       string          `json:"state"`
	StateReason string          `json:"state_reason"`
	User        user            `json:"user"`
	Labels      []label         `json:"labels"`
	Assignees   []user          `json:"assignees"`
	Comments    int             `json:"comments"`
	Body        string          `json:"body"`
	HTMLURL     string          `json:"html_url"`
	CreatedAt   time.Time       `json:"created_at"`
	UpdatedAt   time.Time       `json:"updated_at"`
	ClosedAt    *time.Time      `json:"closed_at"`
	PullRequest json.RawMessage `json:"pull_request"`
}

func (c *client) issue(ctx context.Context, s string) (string, error) {
	t, err := parseTarget(s, true, true)
	if err != nil {
		return "", err
	}
	var is issueJSON
	if _, err := c.get(ctx, fmt.Sprintf("%s/issues/%d", t.repoPath(), t.num), &is); err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s\n", t, is.Title)
	state := is.State
	if is.StateReason != "" && is.State == "closed" {
		state += " (" + strings.ReplaceAll(is.StateReason, "_", " ") + ")"
	}
	fields := []string{"state: " + state, "author: " + is.User.Login}
	if l := labels(is.Labels); l != "" {
		fields = append(fields, "labels: "+l)
	}
	if len(is.Assignees) > 0 {
		fields = append(fields, "assignees: "+logins(is.Assignees))
	}
	fields = append(fields, fmt.Sprintf("comments: %d", is.Comments))
	b.WriteString(strings.Join(fields, " · ") + "\n")
	fmt.Fprintf(&b, "created %s, updated %s", day(is.CreatedAt), day(is.UpdatedAt))
	if is.ClosedAt != nil {
		fmt.Fprintf(&b, ", closed %s", day(*is.ClosedAt))
	}
	b.WriteString("\n" + is.HTMLURL + "\n")
	if len(is.PullRequest) > 0 && string(is.PullRequest) != "null" {
		b.WriteString("(this is a pull request; query_type pr shows its changes)\n")
	}
	writeBody(&b, is.Body)
	return b.String(), nil
}

type pullJSON struct {
	issueJSON
	Draft          bool       `json:"draft"`
	Merged         bool       `json:"merged"`
	MergedAt       *time.Time `json:"merged_at"`
	MergeableState string     `json:"mergeable_state"`
	Additions      int        `json:"additions"`
	Deletions      int        `json:"deletions"`
	ChangedFiles   int        `json:"changed_files"`
	Commits        int        `json:"commits"`
	Base           struct {
		Ref string `json:"ref"`
	} `json:"base"`
	Head struct {
		Label string `json:"label"`
	} `json:"head"`
}

type fileJSON struct {
	Filename  string `json:"filename"`
	Status    string `json:"status"`
	Additions int    `json:"additions"`
	Deletions int    `json:"deletions"`
}

func (c *client) pull(ctx context.Context, s string) (string, error) {
	t, err := parseTarget(s, true, true)
	if err != nil {
		return "", err
	}
	var pr pullJSON
	p := fmt.Sprintf("%s/pulls/%d", t.repoPath(), t.num)
	if _, err := c.get(ctx, p, &pr); err != nil {
		return "", err
	}
	var files []fileJSON
	if _, err := c.get(ctx, fmt.Sprintf("%s/files?per_page=%d", p, maxFiles), &files); err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s (pull request): %s\n", t, pr.Title)
	state := pr.State
	if pr.Merged || pr.MergedAt != nil {
		state = "merged"
	}
	if pr.Draft {
		state += ", draft"
	}
	fields := []string{"state: " + state, "author: " + pr.User.Login, "base " + pr.Base.Ref + " ← " + pr.Head.Label}
	if l := labels(pr.Labels); l != "" {
		fields = append(fields, "labels: "+l)
	}
	b.WriteString(strings.Join(fields, " · ") + "\n")
	fmt.Fprintf(&b, "changes: +%d −%d in %d files, %d commits", pr.Additions, pr.Deletions, pr.ChangedFiles, pr.Commits)
	if pr.MergeableState != "" && state != "merged" {
		fmt.Fprintf(&b, " · mergeable: %s", pr.MergeableState)
	}
	fmt.Fprintf(&b, "\ncreated %s, updated %s\n%s\n", day(pr.CreatedAt), day(pr.UpdatedAt), pr.HTMLURL)
	if len(files) > 0 {
		b.WriteString("\nfiles:\n")
		for _, f := range files {
			fmt.Fprintf(&b, "  %s  +%d −%d (%s)\n", f.Filename, f.Additions, f.Deletions, f.Status)
		}
		if pr.ChangedFiles > len(files) {
			fmt.Fprintf(&b, "  … and %d more files\n", pr.ChangedFiles-len(files))
		}
	}
	writeBody(&b, pr.Body)
	return b.String(), nil
}

type runJSON struct {
	ID           int64     `json:"id"`
	Name         string    `json:"name"`
	DisplayTitle string    `json:"display_title"`
	RunNumber    int       `json:"run_number"`
	RunAttempt   int       `json:"run_attempt"`
	Status       string    `json:"status"`
	Conclusion   string    `json:"conclusion"`
	Event        string    `json:"event"`
	HeadBranch   string    `json:"head_branch"`
	HeadSHA      string    `json:"head_sha"`
	HTMLURL      string    `json:"html_url"`
	CreatedAt    time.Time `json:"created_at"`
	UpdatedAt    time.Time `json:"updated_at"`
}

type jobJSON struct {
	Name       string `json:"name"`
	Status     string `json:"status"`
	Conclusion string `json:"conclusion"`
	HTMLURL    string `json:"html_url"`
	Steps      []struct {
		Name       string `json:"name"`
		Conclusion string `json:"conclusion"`
	} `json:"steps"`
}

// failed says a job or step conclusion is a failure to report.
func failed(conclusion string) bool {
	switch conclusion {
	case "failure", "timed_out", "cancelled", "action_required", "startup_failure":
		return true
	}
	return false
}

func (c *client) workflowRun(ctx context.Context, s string) (string, error) {
	t, err := parseTarget(s, false, true)
	if err != nil {
		return "", err
	}
	if t.num == 0 {
		return c.recentRuns(ctx, t)
	}
	var r runJSON
	p := fmt.Sprintf("%s/actions/runs/%d", t.repoPath(), t.num)
	if _, err := c.get(ctx, p, &r); err != nil {
		return "", err
	}
	var jobs struct {
		TotalCount int       `json:"total_count"`
		Jobs       []jobJSON `json:"jobs"`
	}
	if _, err := c.get(ctx, p+"/jobs?filter=latest&per_page=100", &jobs); err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s/%s run %d: %s (#%d, attempt %d)\n", t.owner, t.repo, r.ID, r.Name, r.RunNumber, max(r.RunAttempt, 1))
	if r.DisplayTitle != "" && r.DisplayTitle != r.Name {
		fmt.Fprintf(&b, "title: %s\n", r.DisplayTitle)
	}
	conclusion := r.Conclusion
	if conclusion == "" {
		conclusion = "none yet"
	}
	fmt.Fprintf(&b, "status: %s · conclusion: %s · event: %s · branch: %s · commit %s\n",
		r.Status, conclusion, r.Event, r.HeadBranch, short(r.HeadSHA))
	fmt.Fprintf(&b, "started %s, updated %s\n%s\n", r.CreatedAt.UTC().Format(time.DateTime), r.UpdatedAt.UTC().Format(time.DateTime), r.HTMLURL)
	var bad []jobJSON
	for _, j := range jobs.Jobs {
		if failed(j.Conclusion) {
			bad = append(bad, j)
		}
	}
	switch {
	case len(bad) > 0:
		fmt.Fprintf(&b, "\nfailing jobs (%d of %d):\n", len(bad), len(jobs.Jobs))
		for _, j := range bad {
			fmt.Fprintf(&b, "  - %s (%s)", j.Name, j.Conclusion)
			var steps []string
			for _, st := range j.Steps {
				if failed(st.Conclusion) {
					steps = append(steps, fmt.Sprintf("%q", st.Name))
				}
			}
			if len(steps) > 0 {
				fmt.Fprintf(&b, ": failed step %s", strings.Join(steps, ", "))
			}
			if j.HTMLURL != "" {
				fmt.Fprintf(&b, "\n    %s", j.HTMLURL)
			}
			b.WriteString("\n")
		}
	case len(jobs.Jobs) > 0:
		fmt.Fprintf(&b, "\nno failing jobs (%d jobs)\n", len(jobs.Jobs))
	}
	return b.String(), nil
}

func (c *client) recentRuns(ctx context.Context, t target) (string, error) {
	var runs struct {
		TotalCount   int       `json:"total_count"`
		WorkflowRuns []runJSON `json:"workflow_runs"`
	}
	if _, err := c.get(ctx, t.repoPath()+"/actions/runs?per_page=10", &runs); err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s: the %d most recent workflow runs of %d (query_type run with %s#RUN_ID shows one)\n",
		t, len(runs.WorkflowRuns), runs.TotalCount, t)
	for _, r := range runs.WorkflowRuns {
		state := r.Status
		if r.Conclusion != "" {
			state = r.Conclusion
		}
		fmt.Fprintf(&b, "  %d  %s  %s · %s · %s · %s\n", r.ID, r.Name, state, r.HeadBranch, r.Event, day(r.CreatedAt))
	}
	return b.String(), nil
}

type repoJSON struct {
	FullName      string    `json:"full_name"`
	Description   string    `json:"description"`
	HTMLURL       string    `json:"html_url"`
	Homepage      string    `json:"homepage"`
	Stars         int       `json:"stargazers_count"`
	Forks         int       `json:"forks_count"`
	OpenIssues    int       `json:"open_issues_count"`
	Language      string    `json:"language"`
	DefaultBranch string    `json:"default_branch"`
	Visibility    string    `json:"visibility"`
	Private       bool      `json:"private"`
	Archived      bool      `json:"archived"`
	Fork          bool      `json:"fork"`
	Topics        []string  `json:"topics"`
	PushedAt      time.Time `json:"pushed_at"`
	License       *struct {
		SPDXID string `json:"spdx_id"`
	} `json:"license"`
	Parent *struct {
		FullName string `json:"full_name"`
	} `json:"parent"`
}

func (c *client) repository(ctx context.Context, s string) (string, error) {
	t, err := parseTarget(s, false, false)
	if err != nil {
		return "", err
	}
	var r repoJSON
	if _, err := c.get(ctx, t.repoPath(), &r); err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString(r.FullName)
	if r.Description != "" {
		b.WriteString(": " + r.Description)
	}
	b.WriteString("\n")
	fields := []string{fmt.Sprintf("stars %d", r.Stars), fmt.Sprintf("forks %d", r.Forks), fmt.Sprintf("open issues and PRs %d", r.OpenIssues)}
	if r.Language != "" {
		fields = append(fields, "language "+r.Language)
	}
	if r.License != nil && r.License.SPDXID != "" {
		fields = append(fields, "license "+r.License.SPDXID)
	}
	fields = append(fields, "default branch "+r.DefaultBranch)
	b.WriteString(strings.Join(fields, " · ") + "\n")
	vis := r.Visibility
	if vis == "" {
		vis = "public"
		if r.Private {
			vis = "private"
		}
	}
	status := []string{vis}
	if r.Archived {
		status = append(status, "archived")
	}
	if r.Fork {
		if r.Parent != nil {
			status = append(status, "fork of "+r.Parent.FullName)
		} else {
			status = append(status, "fork")
		}
	}
	fmt.Fprintf(&b, "%s · last push %s\n", strings.Join(status, " · "), day(r.PushedAt))
	if len(r.Topics) > 0 {
		b.WriteString("topics: " + strings.Join(r.Topics, ", ") + "\n")
	}
	if r.Homepage != "" {
		b.WriteString("homepage: " + r.Homepage + "\n")
	}
	b.WriteString(r.HTMLURL + "\n")
	return b.String(), nil
}

func (c *client) api(ctx context.Context, p string) (string, error) {
	body, err := c.get(ctx, p, nil)
	if err != nil {
		return "", err
	}
	var out bytes.Buffer
	if json.Indent(&out, body, "", " ") != nil {
		out.Reset()
		out.Write(body)
	}
	s := strings.ToValidUTF8(out.String(), "\uFFFD")
	if n := utf8.RuneCountInString(s); n > maxAPIChars {
		s = string([]rune(s)[:maxAPIChars]) +
			fmt.Sprintf("\n[truncated: showing %d of %d characters; ask for less with per_page or a narrower path]", maxAPIChars, n)
	}
	return s, nil
}

func labels(ls []label) string {
	names := make([]string, len(ls))
	for i, l := range ls {
		names[i] = l.Name
	}
	return strings.Join(names, ", ")
}

func logins(us []user) string {
	names := make([]string, len(us))
	for i, u := range us {
		names[i] = u.Login
	}
	return strings.Join(names, ", ")
}

func day(t time.Time) string {
	if t.IsZero() {
		return "unknown"
	}
	return t.UTC().Format(time.DateOnly)
}

func short(sha string) string {
	if len(sha) > 7 {
		return sha[:7]
	}
	return sha
}

// writeBody appends an issue or pull request body, trimmed.
func writeBody(b *strings.Builder, body string) {
	body = strings.TrimSpace(strings.ReplaceAll(body, "\r\n", "\n"))
	if body == "" {
		b.WriteString("\n(no description)\n")
		return
	}
	b.WriteString("\n")
	if n := utf8.RuneCountInString(body); n > maxBodyChars {
		body = string([]rune(body)[:maxBodyChars]) + fmt.Sprintf("\n[trimmed: %d more characters]", n-maxBodyChars)
	}
	b.WriteString(body + "\n")
}
