<?php
// Minimal stand-in for roots/wp-config's Config (see vendor/autoload.php).

namespace Roots\WPConfig\Exceptions {
    class ConstantAlreadyDefinedException extends \RuntimeException {}
    class UndefinedConfigKeyException extends \RuntimeException {}
}

namespace Roots\WPConfig {
    use Roots\WPConfig\Exceptions\ConstantAlreadyDefinedException;
    use Roots\WPConfig\Exceptions\UndefinedConfigKeyException;

    class Config
    {
        protected static $configMap = [];

        public static function define(string $key, $value): void
        {
            if (defined($key)) {
                throw new ConstantAlreadyDefinedException("Aborted trying to redefine constant '$key'.");
            }
            static::$configMap[$key] = $value;
        }

        public static function get(string $key)
        {
            if (!array_key_exists($key, static::$configMap)) {
                throw new UndefinedConfigKeyException("'$key' has not been defined. Use `Config::define('$key', ...)`.");
            }
            return static::$configMap[$key];
        }

        public static function remove(string $key): void
        {
            unset(static::$configMap[$key]);
        }

        public static function apply(): void
        {
            foreach (static::$configMap as $key => $value) {
                if (defined($key) && constant($key) !== $value) {
                    throw new ConstantAlreadyDefinedException("Aborted trying to redefine constant '$key'.");
                }
                defined($key) or define($key, $value);
            }
        }
    }
}
