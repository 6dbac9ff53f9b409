<?php
// Minimal stand-in for oscarotero/env's Env\env() (see vendor/autoload.php):
// the variable from getenv() or $_ENV, with "true", "false", "null",
// "empty" and integers converted; false when unset.

namespace Env;

function env(string $name)
{
    $value = getenv($name);
    if ($value === false && array_key_exists($name, $_ENV)) {
        $value = $_ENV[$name];
    }
    if ($value === false) {
        return false;
    }
    switch (strtolower($value)) {
        case 'true':
            return true;
        case 'false':
            return false;
        case 'null':
            return null;
        case 'empty':
            return '';
    }
    if (preg_match('/^-?[0-9]+$/', $value)) {
        return (int) $value;
    }
    return $value;
}
