<?php
// Composer's autoloader, reduced to the three packages Bedrock's
// config/application.php uses. The packages under vendor/ are minimal
// stand-ins written for queuety-go's tests (no network here to install
// roots/wp-config, oscarotero/env and vlucas/phpdotenv): same class and
// function names, same behaviour for what the fixture calls.
spl_autoload_register(function ($class) {
    $map = [
        'Roots\\WPConfig\\Config' => __DIR__ . '/roots/wp-config/src/Config.php',
        'Roots\\WPConfig\\Exceptions\\ConstantAlreadyDefinedException' => __DIR__ . '/roots/wp-config/src/Config.php',
        'Roots\\WPConfig\\Exceptions\\UndefinedConfigKeyException' => __DIR__ . '/roots/wp-config/src/Config.php',
        'Dotenv\\Dotenv' => __DIR__ . '/vlucas/phpdotenv/src/Dotenv.php',
    ];
    if (isset($map[$class])) {
        require_once $map[$class];
    }
});
require_once __DIR__ . '/oscarotero/env/src/functions.php';
