// Package demo holds what `rein demo` runs: a small workspace, the question
// asked about it, and the scripted model's part.
package demo

import (
	"embed"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Question is what the demo asks.
const Question = "Which port does the inventory service listen on, and is anything planned that would change it?"

//go:embed script.yaml
var Script []byte

//go:embed all:workspace
var files embed.FS

// Workspace writes the demo's files into dir.
func Workspace(dir string) error {
	return fs.WalkDir(files, "workspace", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(p, "workspace"), "/")
		// Go sources are stored as .txt so the repository's build ignores them.
		rel = strings.TrimSuffix(rel, ".txt")
		dst := filepath.Join(dir, filepath.FromSlash(rel))
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		b, err := files.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o644)
	})
}
