package cli

import (
	"context"
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/queuety-go/queuety/internal/wpconfig"
)

// wpConfigKey holds the command's wp-config.php settings in App.Metadata:
// the file is run through php once per command, not once per reader.
const wpConfigKey = "queuety.wp-config"

// readWPConfig reads --wp-config, nil when it is not set. With --dsn (or
// QUEUETY_DSN) the database comes from there, and the file gives the table
// prefix and the QUEUETY_* settings only.
func readWPConfig(c *cli.Context) (*wpconfig.Settings, error) {
	path := c.String("wp-config")
	if path == "" {
		return nil, nil
	}
	if s, ok := c.App.Metadata[wpConfigKey].(*wpconfig.Settings); ok {
		return s, nil
	}
	ctx := c.Context
	if ctx == nil {
		ctx = context.Background()
	}
	s, err := wpconfig.Load(ctx, path, wpconfig.Options{HaveDSN: c.String("dsn") != ""})
	if err != nil {
		if s.Reader == wpconfig.ReaderLiteral {
			err = fmt.Errorf("%w (no php on the PATH: only literal define()s can be read)", err)
		}
		return nil, usageError{fmt.Errorf("--wp-config: %w", err)}
	}
	if c.App.Metadata == nil {
		c.App.Metadata = map[string]any{}
	}
	c.App.Metadata[wpConfigKey] = &s
	return &s, nil
}
