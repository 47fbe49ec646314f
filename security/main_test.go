package security

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

var (
	binOnce sync.Once
	binPath string
	binErr  error
	binDir  string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// reinBinary builds the rein command once per test binary and returns its
// path. Tests that need it skip under -short.
func reinBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and attacks the rein command")
	}
	binOnce.Do(func() {
		binDir, binErr = os.MkdirTemp("", "rein-security-")
		if binErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "rein")
		out, err := exec.Command("go", "build", "-o", binPath, "github.com/reinhq/rein/cmd/rein").CombinedOutput()
		if err != nil {
			binErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}
