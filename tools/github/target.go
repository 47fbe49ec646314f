package github

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// target is what a query names: a repository, and a number within it (an
// issue, a pull request or a workflow run) when the query needs one.
type target struct {
	owner, repo string
	num         int64
}

func (t target) repoPath() string { return "/repos/" + t.owner + "/" + t.repo }

func (t target) String() string {
	if t.num == 0 {
		return t.owner + "/" + t.repo
	}
	return fmt.Sprintf("%s/%s#%d", t.owner, t.repo, t.num)
}

// GitHub's own rules are narrower; these only keep a name from reaching
// into another path.
var (
	ownerRe = regexp.MustCompile(`^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})$`)
	repoRe  = regexp.MustCompile(`^[A-Za-z0-9._-]{1,100}$`)
)

// parseTarget reads "OWNER/REPO", "OWNER/REPO#N", or a github.com URL of a
// repository, issue, pull request or run. needNum says the query needs a
// number; wantNum allows one.
func parseTarget(s string, needNum, wantNum bool) (target, error) {
	orig := s
	s = strings.TrimSpace(s)
	s = strings.TrimPrefix(strings.TrimPrefix(s, "https://"), "http://")
	s, _, _ = strings.Cut(s, "?")
	s = strings.TrimSuffix(s, "/")
	segs := strings.Split(s, "/")
	if len(segs) > 0 && strings.Contains(segs[0], ".") {
		segs = segs[1:] // a host: github.com or an enterprise server
	}
	var t target
	var numText string
	if len(segs) < 2 {
		return t, targetError(orig, needNum)
	}
	t.owner = segs[0]
	t.repo, numText, _ = strings.Cut(segs[1], "#")
	t.repo = strings.TrimSuffix(t.repo, ".git")
	rest := segs[2:]
	if numText == "" && len(rest) >= 2 {
		switch rest[0] {
		case "issues", "pull", "pulls":
			numText = rest[1]
		case "actions":
			if len(rest) >= 3 && rest[1] == "runs" {
				numText = rest[2]
			}
		}
		if numText == "" {
			return t, targetError(orig, needNum)
		}
	} else if len(rest) > 0 && numText == "" {
		return t, targetError(orig, needNum)
	}
	if !ownerRe.MatchString(t.owner) || !repoRe.MatchString(t.repo) || t.repo == "." || t.repo == ".." {
		return t, targetError(orig, needNum)
	}
	if numText != "" {
		n, err := strconv.ParseInt(numText, 10, 64)
		if err != nil || n <= 0 || !wantNum {
			return t, targetError(orig, needNum)
		}
		t.num = n
	}
	if needNum && t.num == 0 {
		return t, targetError(orig, needNum)
	}
	return t, nil
}

func targetError(s string, needNum bool) error {
	if needNum {
		return fmt.Errorf(`target %q: want OWNER/REPO#NUMBER, such as golang/go#1234, or its github.com URL`, s)
	}
	return fmt.Errorf(`target %q: want OWNER/REPO, such as golang/go`, s)
}
