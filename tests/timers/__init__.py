"""The runtime: keys, the tick, the gate, leases, the outbox, schedules, webhooks, the API and the CLI."""
