package sandbox

import (
	"fmt"
	"os"
	"runtime"
	"testing"
)

// helperEnv names what the test binary does when a test runs it as a
// command, instead of running the tests.
const helperEnv = "REIN_SANDBOX_TEST_HELPER"

func TestMain(m *testing.M) {
	if h := os.Getenv(helperEnv); h != "" {
		os.Exit(helper(h))
	}
	os.Exit(m.Run())
}

func helper(name string) int {
	switch name {
	case "alloc":
		// 3 GiB, above the default memory limit. Not touched: where the
		// limit does not bite, the pages are never really used.
		fmt.Println("allocating 3 GiB")
		b := make([]byte, 3<<30)
		fmt.Println("allocated", len(b))
		runtime.KeepAlive(b)
		return 0
	}
	fmt.Fprintln(os.Stderr, "unknown helper", name)
	return 2
}
