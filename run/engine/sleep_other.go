//go:build !linux

package engine

import "time"

// preciseSleep falls back to the runtime timer where nanosleep is not wired up.
func preciseSleep(d time.Duration) { time.Sleep(d) }
