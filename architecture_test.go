package rein_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// architectureDoc is where the order of the packages is written, once: the
// tables under its "## Packages" heading, ground floor first.
const architectureDoc = "docs/ARCHITECTURE.md"

// knownDownward lists the imports that still run down the page, importer →
// imported, each with why it is tolerated. An entry that no longer matches
// an import fails the test, so the list only shrinks.
var knownDownward = map[string]string{}

// TestImportsFollowTheArchitecture holds the code to the order
// docs/ARCHITECTURE.md documents: every package of the module has a row,
// every row is a package, and a package's non-test code imports only
// packages on earlier rows.
func TestImportsFollowTheArchitecture(t *testing.T) {
	doc, err := os.ReadFile(architectureDoc)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := parseRows(doc)
	if err != nil {
		t.Fatalf("%s: %v", architectureDoc, err)
	}
	module, imports := listImports(t)
	for _, p := range problems(module, rows, imports, knownDownward) {
		t.Error(p)
	}
}

// TestArchitectureNamesFilesThatExist keeps the page from naming a file
// that was moved or split: every `dir/file.go` it names exists, and so does
// every bare `file.go` in a package's row, in that package.
func TestArchitectureNamesFilesThatExist(t *testing.T) {
	doc, err := os.ReadFile(architectureDoc)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := parseRows(doc)
	if err != nil {
		t.Fatalf("%s: %v", architectureDoc, err)
	}
	files := namedFiles(doc, rows)
	if len(files) < 10 {
		t.Fatalf("%s names %d files (%q); the check reads `dir/file.go` in backticks", architectureDoc, len(files), files)
	}
	for _, f := range files {
		if _, err := os.Stat(filepath.FromSlash(f)); err != nil {
			t.Errorf("%s names %s, which does not exist: say where the code is now", architectureDoc, f)
		}
	}
}

// TestImportOrderCatchesAnUpwardImport shows the check is not vacuous: each
// kind of problem, on a small module.
func TestImportOrderCatchesAnUpwardImport(t *testing.T) {
	const m = "example.com/m"
	rows := []row{{names: []string{"llm"}}, {names: []string{"tool"}}, {names: []string{"tools/web", "tools/github"}}, {names: []string{"loop"}}, {names: []string{""}}}
	inOrder := func() map[string][]string {
		return map[string][]string{
			m + "/llm": nil, m + "/tool": {m + "/llm"}, m + "/tools/web": {m + "/tool"}, m + "/tools/github": {m + "/tool"},
			m + "/loop": {m + "/llm", m + "/tool"}, m: {m + "/loop"},
		}
	}
	for _, tc := range []struct {
		name   string
		change func(map[string][]string)
		known  map[string]string
		want   []string
	}{
		{"in order", func(map[string][]string) {}, nil, nil},
		{"an upward import", func(i map[string][]string) { i[m+"/tool"] = append(i[m+"/tool"], m+"/loop") }, nil,
			[]string{"tool (row 2) imports loop (row 4)"}},
		{"an import of the root", func(i map[string][]string) { i[m+"/loop"] = append(i[m+"/loop"], m) }, nil,
			[]string{"loop (row 4) imports rein (root) (row 5)"}},
		{"an import within a row", func(i map[string][]string) { i[m+"/tools/web"] = append(i[m+"/tools/web"], m+"/tools/github") }, nil,
			[]string{"tools/web (row 3) imports tools/github (row 3)"}},
		{"a known exception", func(i map[string][]string) { i[m+"/tool"] = append(i[m+"/tool"], m+"/loop") },
			map[string]string{"tool → loop": "being removed"}, nil},
		{"a known exception that no longer happens", func(map[string][]string) {}, map[string]string{"tool → loop": "being removed"},
			[]string{`the known exception "tool → loop" no longer happens`}},
		{"a package without a row", func(i map[string][]string) { i[m+"/window"] = []string{m + "/llm"} }, nil,
			[]string{"window has no row"}},
		{"a row without a package", func(i map[string][]string) { delete(i, m+"/tools/github") }, nil,
			[]string{"tools/github (line 0 of docs/ARCHITECTURE.md) is not a package"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			imports := inOrder()
			tc.change(imports)
			got := problems(m, rows, imports, tc.known)
			if len(got) != len(tc.want) {
				t.Fatalf("problems = %q, want %d matching %q", got, len(tc.want), tc.want)
			}
			for i, w := range tc.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("problem %d = %q, want it to contain %q", i, got[i], w)
				}
			}
		})
	}
}

// row is one row of the page's package tables: the packages it names,
// relative to the module ("" for the root), which must not import each
// other.
type row struct {
	names []string
	line  int
}

var backticked = regexp.MustCompile("`([^`]+)`")

// parseRows reads the package tables: every table row between the
// "## Packages" heading and the next "## " heading whose first cell names
// packages in backticks. `rein` (root) is the module's root package.
func parseRows(doc []byte) ([]row, error) {
	var rows []row
	in := false
	sc := bufio.NewScanner(bytes.NewReader(doc))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.HasPrefix(line, "## ") {
			in = strings.HasPrefix(line, "## Packages")
			continue
		}
		if !in || !strings.HasPrefix(line, "| `") {
			continue
		}
		first := strings.SplitN(strings.TrimPrefix(line, "|"), "|", 2)[0]
		r := row{line: n}
		for _, m := range backticked.FindAllStringSubmatch(first, -1) {
			name := m[1]
			if name == "rein" && strings.Contains(first, "(root)") {
				name = ""
			}
			r.names = append(r.names, name)
		}
		rows = append(rows, r)
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("no package rows under a %q heading", "## Packages")
	}
	return rows, sc.Err()
}

// listImports returns the module path and, for every package of the
// module, the packages of the module its non-test files import.
func listImports(t *testing.T) (string, map[string][]string) {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go command is not on PATH:", err)
	}
	out, err := exec.Command(gobin, "list", "-m").Output()
	if err != nil {
		t.Fatalf("go list -m: %v", err)
	}
	module := strings.TrimSpace(string(out))
	out, err = exec.Command(gobin, "list", "-f", "{{.ImportPath}}{{range .Imports}} {{.}}{{end}}", "./...").Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("go list ./...: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("go list ./...: %v", err)
	}
	imports := make(map[string][]string)
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		var ours []string
		for _, imp := range f[1:] {
			if imp == module || strings.HasPrefix(imp, module+"/") {
				ours = append(ours, imp)
			}
		}
		imports[f[0]] = ours
	}
	return module, imports
}

// problems checks imports (package → the module's packages it imports,
// full import paths) against rows, with the known exceptions (importer →
// imported), and says what is wrong and what to do.
func problems(module string, rows []row, imports map[string][]string, known map[string]string) []string {
	rel := func(path string) string {
		return strings.TrimPrefix(strings.TrimPrefix(path, module), "/")
	}
	show := func(name string) string {
		if name == "" {
			return "rein (root)"
		}
		return name
	}
	at := make(map[string]int) // package → its row, counted from 1
	var out []string
	for i, r := range rows {
		for _, n := range r.names {
			if j, dup := at[n]; dup {
				out = append(out, fmt.Sprintf("%s has two rows in %s (rows %d and %d): keep one", show(n), architectureDoc, j, i+1))
			}
			at[n] = i + 1
		}
	}
	pkgs := make([]string, 0, len(imports))
	for p := range imports {
		pkgs = append(pkgs, rel(p))
	}
	slices.Sort(pkgs)
	for _, p := range pkgs {
		if _, ok := at[p]; !ok {
			out = append(out, fmt.Sprintf("%s has no row in %s: add one on the floor its imports put it", show(p), architectureDoc))
		}
	}
	for _, r := range rows {
		for _, n := range r.names {
			if !slices.Contains(pkgs, n) {
				out = append(out, fmt.Sprintf("%s (line %d of %s) is not a package of %s: remove the row or fix its name", show(n), r.line, architectureDoc, module))
			}
		}
	}
	used := make(map[string]bool)
	for _, p := range pkgs {
		from, ok := at[p]
		if !ok {
			continue
		}
		full := module
		if p != "" {
			full += "/" + p
		}
		for _, imp := range imports[full] {
			q := rel(imp)
			to, ok := at[q]
			if !ok || to < from {
				continue
			}
			edge := show(p) + " → " + show(q)
			if _, ok := known[edge]; ok {
				used[edge] = true
				continue
			}
			out = append(out, fmt.Sprintf("%s (row %d) imports %s (row %d): imports must run up %s, to earlier rows; "+
				"move what %s needs into a package above it, or move the row if the documented order is wrong",
				show(p), from, show(q), to, architectureDoc, show(p)))
		}
	}
	edges := make([]string, 0, len(known))
	for edge := range known {
		edges = append(edges, edge)
	}
	slices.Sort(edges)
	for _, edge := range edges {
		if !used[edge] {
			out = append(out, fmt.Sprintf("the known exception %q no longer happens: remove it from knownDownward", edge))
		}
	}
	return out
}

// goFile is a file of the module as the page writes it.
var goFile = regexp.MustCompile("`((?:[a-z0-9_]+/)*[a-z0-9_]+\\.go)`")

// namedFiles returns the files the page names, as paths from the module's
// root: a bare name in a package's row is in that package.
func namedFiles(doc []byte, rows []row) []string {
	rowAt := make(map[int]row)
	for _, r := range rows {
		rowAt[r.line] = r
	}
	var files []string
	for i, line := range strings.Split(string(doc), "\n") {
		for _, m := range goFile.FindAllStringSubmatch(line, -1) {
			f := m[1]
			if !strings.Contains(f, "/") {
				r, ok := rowAt[i+1]
				if !ok || len(r.names) == 0 {
					continue
				}
				f = pathJoin(r.names[0], f)
			}
			files = append(files, f)
		}
	}
	return files
}

func pathJoin(dir, file string) string {
	if dir == "" {
		return file
	}
	return dir + "/" + file
}
