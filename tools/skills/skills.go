// Package skills is rein's skills (DESIGN §7.3): directories holding a
// SKILL.md whose front matter names the skill and says what it is for. The
// system prompt lists one line per skill; read_skill loads a skill's
// SKILL.md, or a file beside it, when a task needs it. The package also
// reads the workspace's AGENTS.md into the instructions.
package skills

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"go.yaml.in/yaml/v3"
)

// FileName is the file that makes a directory a skill.
const FileName = "SKILL.md"

// Skill is one skill found in a skills directory.
type Skill struct {
	Name        string
	Description string
	// Dir is the skill's directory; read_skill reads nothing outside it.
	Dir string
}

// Catalog is the skills of a turn, by precedence: when two directories
// hold a skill of the same name, the first directory's wins.
type Catalog struct {
	Skills []Skill
	// Problems are skills left out, with why (no front matter, no name or
	// description, a name already taken).
	Problems []string
}

// Get returns the skill called name.
func (c *Catalog) Get(name string) (Skill, bool) {
	if c == nil {
		return Skill{}, false
	}
	for _, s := range c.Skills {
		if s.Name == name {
			return s, true
		}
	}
	return Skill{}, false
}

// Dirs returns the default skills directories, first the one that wins:
// WORKSPACE/.rein/skills, then $XDG_CONFIG_HOME/rein/skills (default
// ~/.config/rein/skills). A workspace's skill overrides the user's of the
// same name, as the project knows its own conventions best.
func Dirs(workspace string) []string {
	var dirs []string
	if workspace != "" {
		dirs = append(dirs, filepath.Join(workspace, ".rein", "skills"))
	}
	if d := os.Getenv("XDG_CONFIG_HOME"); d != "" && filepath.IsAbs(d) {
		dirs = append(dirs, filepath.Join(d, "rein", "skills"))
	} else if home, err := os.UserHomeDir(); err == nil {
		dirs = append(dirs, filepath.Join(home, ".config", "rein", "skills"))
	}
	return dirs
}

// Load reads the skills of dirs: each subdirectory holding a SKILL.md with
// name and description in its front matter. A directory that does not
// exist holds no skills; one that cannot be read is an error (the has_skills
// gate then fails closed). Broken skills are left out and listed in
// Problems.
func Load(dirs []string) (*Catalog, error) {
	c := &Catalog{}
	taken := map[string]string{}
	for _, dir := range dirs {
		entries, err := os.ReadDir(dir)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("skills: %w", err)
		}
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), ".") {
				continue
			}
			sdir := filepath.Join(dir, e.Name())
			if fi, err := os.Stat(sdir); err != nil || !fi.IsDir() {
				continue
			}
			b, err := readCapped(filepath.Join(sdir, FileName), maxSkillFile)
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				c.Problems = append(c.Problems, fmt.Sprintf("%s: %v", sdir, err))
				continue
			}
			fm, _, err := frontMatter(b)
			if err != nil {
				c.Problems = append(c.Problems, fmt.Sprintf("%s: %v", filepath.Join(sdir, FileName), err))
				continue
			}
			if prev, ok := taken[fm.Name]; ok {
				c.Problems = append(c.Problems, fmt.Sprintf("%s: the skill %q is already defined in %s", sdir, fm.Name, prev))
				continue
			}
			taken[fm.Name] = sdir
			c.Skills = append(c.Skills, Skill{Name: fm.Name, Description: fm.Description, Dir: sdir})
		}
	}
	return c, nil
}

type front struct {
	Name        string `yaml:"name"`
	Description string `yaml:"description"`
}

// frontMatter parses the YAML between a leading "---" line and the next
// one, and returns the body after it.
func frontMatter(b []byte) (front, []byte, error) {
	b = bytes.TrimPrefix(b, []byte("\xef\xbb\xbf"))
	rest, ok := cutLine(b, "---")
	if !ok {
		return front{}, nil, errors.New(`no front matter: start the file with a "---" line, name: and description:, and another "---" line`)
	}
	var yml []byte
	for {
		if len(rest) == 0 {
			return front{}, nil, errors.New(`the front matter has no closing "---" line`)
		}
		line, after, _ := bytes.Cut(rest, []byte("\n"))
		if strings.TrimSpace(string(line)) == "---" {
			rest = after
			break
		}
		yml = append(append(yml, line...), '\n')
		rest = after
	}
	var fm front
	if err := yaml.Unmarshal(yml, &fm); err != nil {
		return front{}, nil, fmt.Errorf("front matter: %w", err)
	}
	fm.Name = strings.TrimSpace(fm.Name)
	fm.Description = strings.Join(strings.Fields(fm.Description), " ")
	switch {
	case fm.Name == "":
		return front{}, nil, errors.New("the front matter has no name")
	case strings.ContainsAny(fm.Name, " \t/\\"):
		return front{}, nil, fmt.Errorf("the name %q has spaces or slashes", fm.Name)
	case fm.Description == "":
		return front{}, nil, errors.New("the front matter has no description")
	}
	return fm, rest, nil
}

// cutLine removes a first line equal to want (surrounding space ignored).
func cutLine(b []byte, want string) ([]byte, bool) {
	line, rest, _ := bytes.Cut(b, []byte("\n"))
	if strings.TrimSpace(string(line)) != want {
		return nil, false
	}
	return rest, true
}

// Limits of what is read.
const (
	maxSkillFile    = 256 << 10
	maxManifestDesc = 200
	maxAgentsMD     = 64 << 10
)

// readCapped reads a regular file of at most max bytes. It is opened
// without waiting (a FIFO would wait for a writer) and read through the
// bound (a link to a device has size 0 and never ends).
func readCapped(path string, max int64) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file (%v)", filepath.Base(path), fi.Mode().Type())
	}
	if fi.Size() > max {
		return nil, fmt.Errorf("%s has %d bytes, more than %d", filepath.Base(path), fi.Size(), max)
	}
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err == nil && int64(len(b)) > max {
		err = fmt.Errorf("%s has more than %d bytes", filepath.Base(path), max)
	}
	return b, err
}

// Prompt is the skills block of the system prompt: one line per skill.
func (c *Catalog) Prompt() string {
	if c == nil || len(c.Skills) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("Skills: when a task matches one, call read_skill with its name first and follow it.\n")
	for _, s := range c.Skills {
		d := s.Description
		if r := []rune(d); len(r) > maxManifestDesc {
			d = string(r[:maxManifestDesc-1]) + "…"
		}
		fmt.Fprintf(&b, "- %s: %s\n", s.Name, d)
	}
	return strings.TrimRight(b.String(), "\n")
}

// AgentsMD returns the instructions block made of the AGENTS.md at the
// root of fsys, the workspace as its file tools see it
// (sandbox.Workspace.FS), or "" when it has none. The file comes with the
// repository: read through the workspace, a link to a denied file (.env)
// or out of the workspace is refused as read_file refuses it, and only a
// regular file is read, at most 128 KiB of it (a link to /dev/zero or a
// FIFO would never end). A file over 64 KiB is cut, saying so.
func AgentsMD(fsys fs.FS) (string, error) {
	f, err := fsys.Open("AGENTS.md")
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("AGENTS.md: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("AGENTS.md: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("AGENTS.md is not a regular file (%v)", fi.Mode().Type())
	}
	b, err := io.ReadAll(io.LimitReader(f, 2*maxAgentsMD))
	if err != nil {
		return "", fmt.Errorf("AGENTS.md: %w", err)
	}
	size := max(fi.Size(), int64(len(b)))
	text := strings.TrimSpace(string(b))
	if text == "" {
		return "", nil
	}
	if len(text) > maxAgentsMD {
		cut := maxAgentsMD
		for cut > 0 && (text[cut]&0xC0) == 0x80 {
			cut--
		}
		text = text[:cut] + fmt.Sprintf("\n[AGENTS.md cut at %d bytes of %d; read the rest with read_file]", cut, size)
	}
	return "Instructions from AGENTS.md in the workspace:\n\n" + text, nil
}
