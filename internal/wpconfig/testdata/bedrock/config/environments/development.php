<?php
/** Bedrock's development overrides. */

use Roots\WPConfig\Config;

Config::define('SAVEQUERIES', true);
Config::define('WP_DEBUG', true);
Config::define('QUEUETY_DEBUG', true);
