//go:build !unix

package rein_test

import "time"

// processCPU is not measured here: the benchmark reports 0.
func processCPU() time.Duration { return 0 }
