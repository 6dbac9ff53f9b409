package wpconfig

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestConstantLiterals(t *testing.T) {
	t.Parallel()
	s, err := Parse([]byte(`<?php
define('DB_NAME', 'wp'); define('DB_USER', 'u'); define('DB_HOST', 'h');
define( 'QUEUETY_DEBUG', TRUE );
define('QUEUETY_RESOURCE_QUEUE_COST_BUDGETS', array( 'default' => 10, ' llm ' => '3', 'off' => 0, '' => 5, 'neg' => -2, ));
define('QUEUETY_RESOURCE_GROUP_COST_BUDGETS', ['provider' => 2.9, 7]);
define('LIST', [1, -2, 'x', null, false]);
define('COMPUTED', getenv('X'));
`))
	require.NoError(t, err)

	b, ok, err := s.Bool("QUEUETY_DEBUG")
	require.NoError(t, err)
	require.True(t, ok)
	require.True(t, b)
	_, ok, _ = s.Bool("MISSING")
	require.False(t, ok)

	m, ok, err := s.IntMap("QUEUETY_RESOURCE_QUEUE_COST_BUDGETS")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, map[string]int64{"default": 10, "llm": 3}, m)
	m, _, err = s.IntMap("QUEUETY_RESOURCE_GROUP_COST_BUDGETS")
	require.NoError(t, err)
	require.Equal(t, map[string]int64{"provider": 2, "0": 7}, m, "keys after a keyed entry continue from 0, as PHP's would from the highest int key")

	v, ok, err := s.Constant("LIST")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, []any{int64(1), int64(-2), "x", nil, false}, v)

	_, ok, err = s.Constant("COMPUTED")
	require.True(t, ok)
	require.ErrorContains(t, err, "COMPUTED is not a literal")
}
