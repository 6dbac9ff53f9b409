<?php
/**
 * The base configuration for WordPress
 *
 * The wp-config.php creation script uses this file during the installation.
 * You don't have to use the website, you can copy this file to "wp-config.php"
 * and fill in the values.
 *
 * This file contains the following configurations:
 *
 * * Database settings
 * * Secret keys
 * * Database table prefix
 * * ABSPATH
 *
 * @link https://developer.wordpress.org/advanced-administration/wordpress/wp-config/
 *
 * @package WordPress
 */

// ** Database settings - You can get this info from your web host ** //
/** The name of the database for WordPress */
define( 'DB_NAME', 'acme_wp' );

/** Database username */
define( 'DB_USER', 'acme_wp_user' );

/** Database password */
define( 'DB_PASSWORD', 'c0rr3ct:h0rse@batt/ery\'s #1' );

/** Database hostname */
define( 'DB_HOST', 'db.internal:3307' );

/** Database charset to use in creating database tables. */
define( 'DB_CHARSET', 'utf8mb4' );

/** The database collate type. Don't change this if in doubt. */
define( 'DB_COLLATE', '' );

/**#@+
 * Authentication unique keys and salts.
 *
 * Change these to different unique phrases! You can generate these using
 * the {@link https://api.wordpress.org/secret-key/1.1/salt/ WordPress.org secret-key service}.
 *
 * You can change these at any point in time to invalidate all existing cookies.
 * This will force all users to have to log in again.
 *
 * @since 2.6.0
 */
define( 'AUTH_KEY',         '{RHtU|VQcD/.M]pg0TM;//#/*?>aEMM1ZA7<;=V0F?h_HVJWDB&t2;h,WdQ/%ZUm' );
define( 'SECURE_AUTH_KEY',  ',1|4Qho-{x;h=,L|P/A%bQ*cEFUV^2/f(sjGHb<6H<<rlEOS47WgjKCu@}:0xxK<' );
define( 'LOGGED_IN_KEY',    'h)g?5Q.:jWV1m/KaU?yvBPs0]jS]O2Jk<f0_8*~MMF1?*ulMM$Cw3XV;y2,7dFan' );
define( 'NONCE_KEY',        'U_rO]S|E^62^c<h}(n4x}de%Jg1+Kza/.5KxxGWf>v<maQtKn)P@V?SGVBrY_S;u' );
define( 'AUTH_SALT',        '}Ib9OZi;?F`Z3HLKv7&97 TP(~/}Nb`-pjava:(1;bMZ}w&I?Mlvd:p5gjTrD]8O' );
define( 'SECURE_AUTH_SALT', ']s`j@L;nZ5?%&R$!j@8U@)m_[7 aSz7N=RS?^*Ot>v75(y4SXv|E9rwL:b,At%f' );
define( 'LOGGED_IN_SALT',   '=:]6e9c~pCGyb,Y9lMR=&4p`AwBp$3GV[^y1P]ix(O~q*o~RGrB5Vp$g5)C6QsyH' );
define( 'NONCE_SALT',       'ZytfqY^6K?<1Qjah4 :dX&):d#3>eO*/ define(\'DB_NAME\',\'x\'); /*2}lny2' );

/**#@-*/

/**
 * WordPress database table prefix.
 *
 * You can have multiple installations in one database if you give each
 * a unique prefix. Only numbers, letters, and underscores please!
 *
 * At the installation time, database tables are created with the specified prefix.
 * Changing this value after WordPress is installed will make your site think
 * it has not been installed.
 *
 * @link https://developer.wordpress.org/advanced-administration/wordpress/wp-config/#table-prefix
 */
$table_prefix = 'acme_';

/**
 * For developers: WordPress debugging mode.
 *
 * Change this to true to enable the display of notices during development.
 * It is strongly recommended that plugin and theme developers use WP_DEBUG
 * in their development environments.
 *
 * For information on other constants that can be used for debugging,
 * visit the documentation.
 *
 * @link https://developer.wordpress.org/advanced-administration/debug/debug-wordpress/
 */
define( 'WP_DEBUG', false );

/* Add any custom values between this line and the "stop editing" line. */

define( 'QUEUETY_TABLE_PREFIX', 'themequeue' );
define( 'WP_HOME', "https://{$_SERVER['HTTP_HOST']}" );
define( 'WP_SITEURL', WP_HOME . '/wp' );
// define( 'DB_HOST', 'old-db.internal' );

/* That's all, stop editing! Happy publishing. */

/** Absolute path to the WordPress directory. */
if ( ! defined( 'ABSPATH' ) ) {
	define( 'ABSPATH', __DIR__ . '/' );
}

/** Sets up WordPress vars and included files. */
require_once ABSPATH . 'wp-settings.php';
