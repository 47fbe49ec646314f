package cli

import (
	"runtime/debug"
	"strings"
)

// version is what `rein --version` prints and `rein serve` reports in
// initialize: the module version the binary was built as ("(devel)" from a
// checkout) and the commit, when the build recorded them.
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "(unknown: built without module information)"
	}
	return versionOf(bi)
}

// versionOf formats the build information bi: "v1.2.3 (commit abc123def456,
// modified)".
func versionOf(bi *debug.BuildInfo) string {
	v := bi.Main.Version
	if v == "" {
		v = "(devel)"
	}
	var rev, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	if rev == "" {
		return v
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	var b strings.Builder
	b.WriteString(v + " (commit " + rev)
	if modified == "true" {
		b.WriteString(", modified")
	}
	b.WriteString(")")
	return b.String()
}
