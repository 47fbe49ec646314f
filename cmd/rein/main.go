// Command rein is an agent harness: see `rein --help` and `rein demo`.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/reinhq/rein/internal/cli"
)

func main() {
	// The first Ctrl-C interrupts the turn (exit 130); a second one kills.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		stop()
	}()
	os.Exit(cli.Main(ctx, os.Args[1:], os.Stdout, os.Stderr))
}
