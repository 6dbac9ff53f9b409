// Command queuety runs Queuety jobs from the MySQL tables PHP writes. This
// stock binary has only the built-in handlers; see package queuety/cli for
// building one with your own.
package main

import (
	"os"

	"github.com/queuety-go/queuety/queuety/cli"
)

func main() {
	os.Exit(cli.Main(os.Args, cli.Options{}))
}
