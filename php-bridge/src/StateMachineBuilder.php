<?php

declare(strict_types=1);

namespace Queuety;

use Queuety\Enums\Priority;
use Queuety\Enums\StateMachineStatus;

/**
 * Queuety::machine()'s fluent builder: states, each with an optional
 * entry action (a Contracts\StateAction class) or a terminal status, and
 * transitions on named events with optional guards (Contracts\StateGuard).
 * build_runtime_definition() is the definition the plugin stores (same
 * keys, order and sha256 hash); dispatch() writes the machine.
 *
 *     $id = Queuety::machine('review')
 *         ->state('drafting')->action(DraftAction::class)->on('submit', 'published', PublishGuard::class)
 *         ->state('published', StateMachineStatus::Completed)
 *         ->dispatch(['doc_id' => 7]);
 */
class StateMachineBuilder
{
    /** @var array<string, array<string, mixed>> */
    private array $states = [];
    private ?string $current_state = null;
    private ?string $initial_state = null;
    private string $queue = 'default';
    private Priority $priority = Priority::Low;
    private int $max_attempts = 3;
    private ?string $definition_version = null;
    private ?string $idempotency_key = null;

    public function __construct(
        private readonly string $name,
        private readonly StateMachine $machines,
    ) {
    }

    public function initial(string $state_name): self
    {
        $this->initial_state = self::non_blank($state_name, 'State machine initial state cannot be empty.');
        return $this;
    }

    /**
     * Add (or go back to) a state; the first one is the initial state
     * unless initial() says otherwise.
     */
    public function state(string $state_name, ?StateMachineStatus $terminal_status = null): self
    {
        $state_name = self::non_blank($state_name, 'State machine state name cannot be empty.');
        $this->states[$state_name] ??= ['name' => $state_name, 'action' => null, 'action_class' => null, 'terminal_status' => null, 'transitions' => []];
        if ($terminal_status !== null) {
            if ($terminal_status === StateMachineStatus::Running || $terminal_status === StateMachineStatus::WaitingEvent) {
                throw new \InvalidArgumentException('State machine terminal states must resolve to a terminal status.');
            }
            $this->states[$state_name]['terminal_status'] = $terminal_status->value;
        }
        $this->initial_state ??= $state_name;
        $this->current_state = $state_name;
        return $this;
    }

    /**
     * The current state's entry action: a class name, or ['class' => …, 'payload' => […]].
     *
     * @param string|array<string, mixed> $action_class
     */
    public function action(string|array $action_class): self
    {
        $state = $this->current_state_name();
        $action = self::handler_definition($action_class, 'State machine action');
        $this->states[$state]['action'] = $action;
        $this->states[$state]['action_class'] = $action['class'];
        return $this;
    }

    /**
     * @param string|array<string, mixed>|null $guard_class
     */
    public function on(string $event, string $target, string|array|null $guard_class = null, ?string $name = null): self
    {
        $state = $this->current_state_name();
        $event = trim($event);
        $target = trim($target);
        $guard = $guard_class === null ? null : self::handler_definition($guard_class, 'State machine guard');
        if ($event === '') {
            throw new \InvalidArgumentException('State machine transition event cannot be empty.');
        }
        if ($target === '') {
            throw new \InvalidArgumentException('State machine transition target cannot be empty.');
        }
        $this->states[$state]['transitions'][] = [
            'event' => $event,
            'target_state' => $target,
            'guard' => $guard,
            'guard_class' => $guard === null ? null : $guard['class'],
            'name' => $name ?? $event,
        ];
        return $this;
    }

    public function on_queue(string $queue): self
    {
        $this->queue = self::non_blank($queue, 'State machine queue cannot be empty.');
        return $this;
    }

    public function with_priority(Priority $priority): self
    {
        $this->priority = $priority;
        return $this;
    }

    public function max_attempts(int $max_attempts): self
    {
        if ($max_attempts < 1) {
            throw new \InvalidArgumentException('State machine max_attempts must be at least 1.');
        }
        $this->max_attempts = $max_attempts;
        return $this;
    }

    public function version(string $version): self
    {
        $this->definition_version = self::non_blank($version, 'State machine version cannot be empty.');
        return $this;
    }

    public function idempotency_key(string $key): self
    {
        $this->idempotency_key = self::non_blank($key, 'State machine idempotency key cannot be empty.');
        return $this;
    }

    public function get_name(): string
    {
        return $this->name;
    }

    /**
     * The definition as the plugin stores it, with its definition_hash
     * (sha256 of the JSON of the other keys, in this order).
     *
     * @return array<string, mixed>
     * @throws \RuntimeException Without states, or for a missing target or a terminal state with an action.
     */
    public function build_runtime_definition(): array
    {
        if ($this->states === []) {
            throw new \RuntimeException('State machine must define at least one state.');
        }
        $initial = $this->initial_state ?? array_key_first($this->states);
        if ($initial === null || !isset($this->states[$initial])) {
            throw new \RuntimeException('State machine initial state is missing from the definition.');
        }
        foreach ($this->states as $state_name => $def) {
            if ($def['terminal_status'] !== null && $def['action_class'] !== null) {
                throw new \RuntimeException("State '{$state_name}' cannot be terminal and have an entry action.");
            }
            foreach ($def['transitions'] as $t) {
                if (!isset($this->states[$t['target_state']])) {
                    throw new \RuntimeException(sprintf("State '%s' references missing transition target '%s'.", $state_name, $t['target_state']));
                }
            }
        }
        $definition = [
            'name' => $this->name,
            'initial_state' => $initial,
            'states' => $this->states,
            'queue' => $this->queue,
            'priority' => $this->priority->value,
            'max_attempts' => $this->max_attempts,
            'definition_version' => $this->definition_version,
        ];
        $definition['definition_hash'] = hash('sha256', json_encode($definition, JSON_THROW_ON_ERROR));
        return $definition;
    }

    /**
     * Write the machine and return its id (with an idempotency key already
     * used, that machine's id).
     *
     * @param array<string, mixed> $initial_state
     */
    public function dispatch(array $initial_state = []): int
    {
        $options = $this->idempotency_key === null ? [] : ['idempotency_key' => $this->idempotency_key];
        return $this->machines->dispatch_definition($this->build_runtime_definition(), $initial_state, $options);
    }

    private function current_state_name(): string
    {
        return $this->current_state ?? throw new \RuntimeException('Call state() before configuring actions or transitions.');
    }

    private static function non_blank(string $value, string $message): string
    {
        $value = trim($value);
        if ($value === '') {
            throw new \InvalidArgumentException($message);
        }
        return $value;
    }

    /**
     * @param string|array<string, mixed> $definition
     * @return array{class: string, payload: array<mixed>}
     */
    private static function handler_definition(string|array $definition, string $label): array
    {
        if (is_string($definition)) {
            $class = trim($definition);
            if ($class === '') {
                throw new \InvalidArgumentException("{$label} class cannot be empty.");
            }
            return ['class' => $class, 'payload' => []];
        }
        $class = is_string($definition['class'] ?? null) ? trim($definition['class']) : '';
        if ($class === '') {
            throw new \InvalidArgumentException("{$label} definition must include a class.");
        }
        $payload = $definition['payload'] ?? ($definition['config'] ?? []);
        if (!is_array($payload)) {
            throw new \InvalidArgumentException("{$label} payload must be an array.");
        }
        return ['class' => $class, 'payload' => $payload];
    }
}
