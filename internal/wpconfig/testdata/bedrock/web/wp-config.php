<?php
/**
 * Bedrock's web/wp-config.php: the settings live in config/application.php
 * and the site's .env. (Fixture of a roots/bedrock layout for queuety-go.)
 */
require_once dirname(__DIR__) . '/vendor/autoload.php';
require_once dirname(__DIR__) . '/config/application.php';
require_once ABSPATH . 'wp-settings.php';
