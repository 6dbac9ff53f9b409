//go:build !linux

package cli

import "os"

// isTerminal is false where we do not ask the terminal driver: the
// destructive commands then need --yes, the safe side.
func isTerminal(*os.File) bool { return false }
