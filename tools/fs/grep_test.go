package fs_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/reinhq/rein/sandbox"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/tools/fs"
)

// grepTree exercises what both searches must agree on: nesting, globs,
// hidden files, .git, links, binary files, CRLF, long lines, line numbers.
var grepTree = map[string]string{
	"main.go":            "package main\n\nfunc main() {\n\tneedle()\n}\n",
	"lib/a.go":           "package lib\n// Needle in a comment\nvar needle = 1\n",
	"lib/a_test.go":      "package lib\nfunc TestNeedle() { needle++ }\n",
	"lib/deep/b.txt":     "no\nneedle at line 2\nno\nneedle again\n",
	"docs/readme.md":     "# needle\n\nsee lib/a.go\n",
	".hidden/h.go":       "needle hidden\n",
	".git/config":        "needle in git\n",
	"bin/data.bin":       "\x00\x01needle\x00",
	"crlf.txt":           "needle\r\nother\r\n",
	"long.txt":           strings.Repeat("a", 400) + "needle" + strings.Repeat("b", 400) + "\n",
	"noeol.txt":          "last needle",
	"empty.txt":          "",
	"linked.go":          "->main.go",
	"linkdir":            "->lib",
	"out":                "->../outside",
	"space name/f.txt":   "needle with space\n",
	"unicode/ünï.txt":    "ünïcode needle ✓\n",
	"anchors/x.txt":      "needle\n  needle\nneedle end\n",
	"multi/m.txt":        "needle needle needle\n",
	"glob/src/x.ts":      "needle ts\n",
	"glob/src/y.tsx":     "needle tsx\n",
	"glob/other/z.ts":    "needle other\n",
	"glob/src/deep/w.ts": "needle deep\n",
}

func TestGrep(t *testing.T) {
	ws, _ := newWorkspace(t, grepTree)
	tests := []struct {
		name    string
		args    args
		want    string
		wantErr string
	}{
		{name: "one directory", args: args{"pattern": "needle", "path": "lib"},
			want: "lib/a.go:3:var needle = 1\nlib/a_test.go:2:func TestNeedle() { needle++ }\nlib/deep/b.txt:2:needle at line 2\nlib/deep/b.txt:4:needle again\n"},
		{name: "ignore case", args: args{"pattern": "needle", "path": "lib/a.go", "ignore_case": true},
			want: "lib/a.go:2:// Needle in a comment\nlib/a.go:3:var needle = 1\n"},
		{name: "glob on file names", args: args{"pattern": "needle", "glob": "*.go"},
			want: ".hidden/h.go:1:needle hidden\nlib/a.go:3:var needle = 1\nlib/a_test.go:2:func TestNeedle() { needle++ }\nmain.go:4:\tneedle()\n"},
		{name: "glob on paths", args: args{"pattern": "needle", "glob": "glob/src/**/*.ts"},
			want: "glob/src/deep/w.ts:1:needle deep\nglob/src/x.ts:1:needle ts\n"},
		{name: "glob with alternatives", args: args{"pattern": "needle", "glob": "*.{ts,tsx}", "path": "glob/src"},
			want: "glob/src/deep/w.ts:1:needle deep\nglob/src/x.ts:1:needle ts\nglob/src/y.tsx:1:needle tsx\n"},
		{name: "anchors match per line", args: args{"pattern": "^needle$", "path": "anchors"},
			want: "anchors/x.txt:1:needle\n"},
		{name: "CRLF line end not shown", args: args{"pattern": "needle", "path": "crlf.txt"}, want: "crlf.txt:1:needle\n"},
		{name: "last line without line end", args: args{"pattern": "needle", "path": "noeol.txt"}, want: "noeol.txt:1:last needle\n"},
		{name: "long line cut", args: args{"pattern": "needle", "path": "long.txt"},
			want: "long.txt:1:" + strings.Repeat("a", 300) + "… [line cut, 806 bytes]\n"},
		{name: "a line with many matches once", args: args{"pattern": "needle", "path": "multi"}, want: "multi/m.txt:1:needle needle needle\n"},
		{name: "path through a link inside", args: args{"pattern": "needle", "path": "linkdir/deep"},
			want: "linkdir/deep/b.txt:2:needle at line 2\nlinkdir/deep/b.txt:4:needle again\n"},
		{name: "cap", args: args{"pattern": "needle", "max_results": 2},
			want: ".hidden/h.go:1:needle hidden\nanchors/x.txt:1:needle\n(2 of 20 matching lines shown; narrow the pattern, path or glob, or raise max_results)\n"},
		{name: "no match", args: args{"pattern": "haystack", "path": "lib", "glob": "*.go"}, want: "no lines match \"haystack\" in lib (files *.go)\n"},
		{name: "bad pattern", args: args{"pattern": "needle("}, wantErr: "not a valid regular expression (RE2 syntax)"},
		{name: "empty pattern", args: args{"pattern": ""}, wantErr: "pattern is empty"},
		{name: "line end in pattern", args: args{"pattern": `a\nb`}, wantErr: "matches one line at a time"},
		{name: "glob climbing out", args: args{"pattern": "x", "glob": "../*"}, wantErr: "must not contain .."},
		{name: "missing path", args: args{"pattern": "x", "path": "nope"}, wantErr: `no file or directory "nope"`},
		{name: "negative max", args: args{"pattern": "x", "max_results": -1}, wantErr: "must not be negative"},
	}
	for _, s := range searches(t, ws) {
		for _, tt := range tests {
			t.Run(s.name+"/"+tt.name, func(t *testing.T) {
				got, err := call(t, s.tool, tt.args)
				checkResult(t, got, err, tt.want, tt.wantErr)
			})
		}
	}
}

type search struct {
	name string
	tool tool.Tool
}

// searches returns grep with the Go search and, when ripgrep is installed,
// with ripgrep.
func searches(t testing.TB, ws *sandbox.Workspace) []search {
	s := []search{{"go", fs.Grep(ws, "")}}
	if rg := fs.Ripgrep(); rg != "" {
		s = append(s, search{"rg", fs.Grep(ws, rg)})
	} else {
		t.Log("ripgrep not installed; only the Go search is tested")
	}
	return s
}

// TestGrepSearchesAgree runs many queries through both searches and wants
// the same output, byte for byte.
func TestGrepSearchesAgree(t *testing.T) {
	if fs.Ripgrep() == "" {
		t.Skip("ripgrep not installed")
	}
	ws, _ := newWorkspace(t, grepTree)
	goGrep, rgGrep := fs.Grep(ws, ""), fs.Grep(ws, fs.Ripgrep())
	queries := []args{
		{"pattern": "needle"},
		{"pattern": "needle", "max_results": 1000},
		{"pattern": "Needle", "ignore_case": true},
		{"pattern": `\bneedle\b`},
		{"pattern": `^\s+needle`},
		{"pattern": `needle\s*$`},
		{"pattern": `e`},
		{"pattern": `^`},
		{"pattern": `x*`, "path": "lib"},
		{"pattern": `[✓ü]`},
		{"pattern": "needle", "glob": "*.txt"},
		{"pattern": "needle", "glob": "**/*.go"},
		{"pattern": "needle", "glob": "lib/**"},
		{"pattern": "needle", "glob": "glob/*/*.ts"},
		{"pattern": "needle", "path": "lib/a.go"},
		{"pattern": "needle", "path": "space name"},
		{"pattern": "needle", "path": ".git"},
		{"pattern": "needle", "path": "linked.go"},
		{"pattern": "needle", "path": "bin"},
		{"pattern": "package|func", "max_results": 3},
	}
	for _, q := range queries {
		name, _ := json.Marshal(q)
		t.Run(string(name), func(t *testing.T) {
			want, werr := call(t, goGrep, q)
			got, gerr := call(t, rgGrep, q)
			if fmt.Sprint(werr) != fmt.Sprint(gerr) || got != want {
				t.Errorf("rg:\n%s%v\ngo:\n%s%v", got, gerr, want, werr)
			}
		})
	}
}

func TestGrepNeverLeavesTheWorkspace(t *testing.T) {
	ws, _ := newWorkspace(t, grepTree)
	for _, s := range searches(t, ws) {
		t.Run(s.name, func(t *testing.T) {
			got, err := call(t, s.tool, args{"pattern": "SECRET|needle", "max_results": 1000})
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(got, "SECRET") || strings.Contains(got, "out/") {
				t.Errorf("grep read outside the workspace:\n%s", got)
			}
			for _, skipped := range []string{".git/", "bin/data.bin", "linked.go", "linkdir/"} {
				if strings.Contains(got, skipped) {
					t.Errorf("grep searched %s:\n%s", skipped, got)
				}
			}
		})
	}
}

func TestGrepStopsWhenCancelled(t *testing.T) {
	ws, _ := newWorkspace(t, grepTree)
	for _, s := range searches(t, ws) {
		t.Run(s.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			_, err := s.tool.Run(ctx, tool.Call{Args: json.RawMessage(`{"pattern":"needle"}`)})
			if !errors.Is(err, context.Canceled) {
				t.Errorf("err = %v, want context.Canceled", err)
			}
		})
	}
}
