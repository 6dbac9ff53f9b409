<?php
// Minimal stand-in for vlucas/phpdotenv's Dotenv (see vendor/autoload.php):
// KEY=value lines, '#' comments, single quotes literal, double quotes with
// ${VAR} expansion; an immutable loader never overrides a variable the
// environment already has; values go to $_ENV, $_SERVER and putenv().

namespace Dotenv;

final class Dotenv
{
    private function __construct(private string $dir, private array $files) {}

    public static function createImmutable($paths, $names = null, bool $shortCircuit = true): self
    {
        return new self((string) $paths, (array) ($names ?? ['.env']));
    }

    public function load(): array
    {
        $loaded = [];
        foreach ($this->files as $name) {
            $path = $this->dir . '/' . $name;
            if (!is_readable($path)) {
                throw new \RuntimeException("Unable to read the environment file at $path.");
            }
            foreach (file($path, FILE_IGNORE_NEW_LINES | FILE_SKIP_EMPTY_LINES) as $line) {
                $line = trim($line);
                if ($line === '' || $line[0] === '#' || !str_contains($line, '=')) {
                    continue;
                }
                [$key, $value] = array_map('trim', explode('=', $line, 2));
                if (strlen($value) >= 2 && $value[0] === "'" && substr($value, -1) === "'") {
                    $value = substr($value, 1, -1);
                } else {
                    if (strlen($value) >= 2 && $value[0] === '"' && substr($value, -1) === '"') {
                        $value = substr($value, 1, -1);
                    }
                    $value = preg_replace_callback('/\$\{([A-Z0-9_]+)\}/', fn ($m) => getenv($m[1]) === false ? '' : getenv($m[1]), $value);
                }
                if (getenv($key) !== false) {
                    continue; // immutable
                }
                putenv("$key=$value");
                $_ENV[$key] = $_SERVER[$key] = $loaded[$key] = $value;
            }
        }
        return $loaded;
    }

    public function required($names): self
    {
        foreach ((array) $names as $name) {
            if (getenv($name) === false) {
                throw new \RuntimeException("One or more environment variables failed assertions: $name is missing.");
            }
        }
        return $this;
    }
}
