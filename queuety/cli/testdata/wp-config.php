<?php
/**
 * A wp-config.php for the queuety/cli tests. The tests copy it to a temporary
 * directory with the __PLACEHOLDERS__ filled in from the test database DSN
 * (by default DB_USER root, DB_PASSWORD '', DB_HOST '127.0.0.1:3306').
 *
 * @package WordPress
 */

// ** Database settings ** //
define( 'DB_NAME', '__DB_NAME__' );
define( 'DB_USER', '__DB_USER__' );
define( 'DB_PASSWORD', '__DB_PASSWORD__' );
define( 'DB_HOST', '__DB_HOST__' );
define( 'DB_CHARSET', 'utf8mb4' );
define( 'DB_COLLATE', '' );

/* __EXTRA__ */

$table_prefix = 'wpt_';

define( 'WP_DEBUG', false );

/* That's all, stop editing! Happy publishing. */

if ( ! defined( 'ABSPATH' ) ) {
	define( 'ABSPATH', __DIR__ . '/' );
}

require_once ABSPATH . 'wp-settings.php';
